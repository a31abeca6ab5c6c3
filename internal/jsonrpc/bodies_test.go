package jsonrpc

import (
	"strconv"
	"strings"
	"testing"
)

// A body's buffer fits it, wastes at most a quarter, and goes back to the
// class it came from.
func TestBodyClass(t *testing.T) {
	for n := 0; n < 1<<22; n += 1 + n/7 {
		_, size := bodyClass(n)
		if size < n || (n > minBodyClass && size > n+n/4) {
			t.Fatalf("a body of %d bytes gets a buffer of %d", n, size)
		}
		b := getBody(n)
		if len(*b) != n || cap(*b) != size {
			t.Fatalf("getBody(%d): %d bytes of %d, want %d of %d", n, len(*b), cap(*b), n, size)
		}
		if i, again := bodyClass(cap(*b)); again != size {
			t.Fatalf("a buffer of %d bytes goes back to class %d of %d bytes", size, i, again)
		}
	}
}

// TestFramesInRecycledBuffers: frames read into buffers that earlier
// requests handed back (Raw.Release) read as sent, longer, shorter or as
// long as the frame before, and what the frame's pass noted of the longest
// string is the new frame's.
func TestFramesInRecycledBuffers(t *testing.T) {
	var in strings.Builder
	var want []string
	for i, n := range []int{5000, 5000, 4000, 6000, 100, 5001} {
		chunk := strings.Repeat(string(rune('a'+i)), n-1) + `\n`
		params := `{"session_id":"s` + strconv.Itoa(i) + `","seq":1,"chunk":"` + chunk + `"}`
		want = append(want, params)
		in.WriteString(frame(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"session.append","params":` + params + `}`))
	}
	s := NewServerStream(&pipeConn{in: strings.NewReader(in.String())}, Limits{MaxMessage: 1 << 20}, nil)
	for i, params := range want {
		req, err := readRequest(s)
		if err != nil {
			t.Fatal(err)
		}
		raw := req.Params
		if string(raw.JSON) != params {
			t.Fatalf("request %d: params %.40q..., want %.40q...", i, raw.JSON, params)
		}
		chunk := params[strings.Index(params, `"chunk":`)+len(`"chunk":`) : len(params)-1]
		if string(raw.Long.JSON) != chunk || !raw.Long.Escaped || !raw.Long.Valid {
			t.Fatalf("request %d: longest string %.40q, %+v; want the chunk, escaped and valid", i, raw.Long.JSON, raw.Long.Scanned)
		}
		// What a handler does to the params (an append's chunk is
		// unquoted over its JSON) does not reach the next frame.
		for j := range raw.JSON {
			raw.JSON[j] = 'X'
		}
		raw.Release()
		s.forget(req.ID)
	}
}
