package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// TestSplice: held params take the place of their placeholder as the value
// of "params", wherever jsonrpc2 puts that member; a placeholder anywhere
// else fails the send instead of sending a request without its params.
func TestSplice(t *testing.T) {
	c := NewClientCodec()
	placeholder, release := c.Hold([]byte(`{"chunk":"x"}`))
	defer release()
	p := string(placeholder)
	tests := []struct {
		name, in, want string
	}{
		{"ParamsLast", `{"id":1,"jsonrpc":"2.0","method":"m","params":` + p + `}`,
			`{"id":1,"jsonrpc":"2.0","method":"m","params":{"chunk":"x"}}`},
		{"ParamsFirst", `{"params":` + p + `,"id":1,"jsonrpc":"2.0","meta":{},"method":"m"}`,
			`{"params":{"chunk":"x"},"id":1,"jsonrpc":"2.0","meta":{},"method":"m"}`},
		{"Spaced", `{ "id" : 1 , "params" : ` + p + ` }`, `{"id":1,"params":{"chunk":"x"}}`},
		{"Misplaced", `{"id":1,"jsonrpc":"2.0","method":"m","meta":` + p + `}`, ""},
		{"NotJSON", `{"id":1,"params":` + p, ""},
		// Other requests, whatever their strings, pass untouched.
		{"Other", `{"id":2,"jsonrpc":"2.0","method":"m","params":{"intent":"orion-params-1"}}`,
			`{"id":2,"jsonrpc":"2.0","method":"m","params":{"intent":"orion-params-1"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := c.splice([]byte(tc.in))
			out := bytes.Join(parts, nil)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("splice = %s, want an error", out)
				}
				return
			}
			if err != nil || string(out) != tc.want {
				t.Fatalf("splice = %s, %v; want %s", out, err, tc.want)
			}
		})
	}
	release()
	if n := c.Held(); n != 0 {
		t.Fatalf("%d params held after release", n)
	}
}

// writes records each Write it is given.
type writes struct{ calls [][]byte }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, bytes.Clone(p))
	return len(p), nil
}

// TestClientWritesOneFrameInOneWrite: a request with held params, a chunk
// of the usual sizes, reaches the socket in one write, header and all, so
// that the daemon is woken once for it; a chunk past directPart is written
// from where it is, not copied.
func TestClientWritesOneFrameInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		// whole: the frame in one write; else the params in one of
		// their own.
		whole bool
	}{
		{"Small", 100, true},
		{"FourKiB", 4 << 10, true},
		{"Large", directPart + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClientCodec()
			params := []byte(`{"chunk":"` + strings.Repeat("x", tc.size) + `"}`)
			placeholder, release := c.Hold(params)
			defer release()
			req := &jsonrpc2.Request{Method: "session.append", ID: jsonrpc2.ID{Num: 3}}
			raw := json.RawMessage(placeholder)
			req.Params = &raw
			var w writes
			if err := c.WriteObject(&w, req); err != nil {
				t.Fatal(err)
			}
			apart := false
			for _, c := range w.calls {
				apart = apart || bytes.Equal(c, params)
			}
			if tc.whole && len(w.calls) != 1 {
				t.Errorf("%d writes, want 1", len(w.calls))
			}
			if !tc.whole && !apart {
				t.Errorf("the params were copied into the frame, not written from where they are")
			}
			got := readReplies(t, bytes.Join(w.calls, nil))
			if len(got) != 1 || string(got[0].ID) != "3" {
				t.Fatalf("frames written: %v", got)
			}
			var sent struct {
				Params json.RawMessage `json:"params"`
			}
			body := bytes.Join(w.calls, nil)
			json.Unmarshal(body[bytes.Index(body, []byte("\r\n\r\n"))+4:], &sent)
			if string(sent.Params) != string(params) {
				t.Errorf("params sent are not the ones held (%d bytes, want %d)", len(sent.Params), len(params))
			}
		})
	}
}
