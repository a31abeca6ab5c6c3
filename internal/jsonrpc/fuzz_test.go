package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/jsonstr"
)

// FuzzFrameReader feeds arbitrary bytes to a connection's frame reader, and
// takes each request as the handler would, and checks that nothing panics, that the connection ends
// only with EOF or a frame error, that every frame written back is a
// well-formed JSON-RPC 2.0 response, and that nothing is left behind in the
// stream, the id map or the in-flight counts.
func FuzzFrameReader(f *testing.F) {
	for _, seed := range []string{
		frame(`{"jsonrpc":"2.0","id":1,"method":"daemon.status"}`),
		frame(`{"jsonrpc":"2.0","id":-1,"method":"session.append","params":{"session_id":"s","seq":1,"chunk":"a\u0000<"}}`),
		frame(`{"jsonrpc":"2.0","id":"x","method":"session.begin","params":{"target_file":"/t","operation":"create"}}`),
		frame(`{"jsonrpc":"2.0","id":1.5e300,"method":"session.finalize","params":[1,2]}`),
		frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`),
		frame(`[{"jsonrpc":"2.0","id":1,"method":"m"}]`),
		frame(`{"jsonrpc":"2.0","id":null,"method":"m"}`),
		frame(`{"jsonrpc":"2.0","id":2,"result":null}`),
		frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`),
		frame(`{"jsonrpc":"2.0","id":3,"method":"tx.begin","params":{"files":[{}]}}`),
		frame(`{"jsonrpc":"2.0","id":1,`),
		frame(``),
		"Content-Length: 5000\r\n\r\n",
		"content-length:  2 \r\ncontent-type: x\r\n\r\n{}",
		"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
		"Content-Length: 2\n\n{}",
		strings.Repeat("Content-Length: 2\r\n", 9),
		strings.Repeat("a", 5000),
		rawFrame(`{"jsonrpc":"2.0","id":4,"method":"session.append","params":{"session_id":"s","seq":1}}`, "raw \x00\xff\r\n\r\n"),
		rawFrame(`{"jsonrpc":"2.0","id":5,"method":"daemon.status"}`, ""),
		rawFrame(``, `{"jsonrpc":"2.0","id":6,"method":"m"}`),
		"Content-Length: 2\r\nOrion-Raw-Length: 3\r\n\r\n{}",
		"Content-Length: 40\r\nOrion-Raw-Length: 1\r\nOrion-Raw-Length: 2\r\n\r\n",
		"Content-Length: 5000\r\nOrion-Raw-Length: 4990\r\n\r\n{}",
		"orion-raw-length:  7 \r\nContent-Length: 9\r\n\r\n{}1234567",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &pipeConn{in: bytes.NewReader(in)}
		s := NewServerStream(c, Limits{MaxMessage: 4096, MaxInflight: 4, MaxInflightBytes: 8192}, nil)
		var requests int
		for {
			req, err := readRequest(s)
			if err != nil {
				var fe *frameError
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &fe) {
					t.Fatalf("connection ended with %v", err)
				}
				break
			}
			if raw := req.Params; raw.JSON != nil || raw.Content != nil {
				checkLong(t, raw.JSON, raw.Long)
				// Its buffer goes back, for later frames of this input to
				// be read into.
				raw.Release()
			}
			requests++
			resp := &jsonrpc2.Response{ID: req.RPCID()}
			resp.SetResult(req.Method)
			if err := s.WriteObject(resp); err != nil {
				t.Fatal(err)
			}
		}
		var answered int
		for _, r := range readReplies(t, c.written()) {
			if len(r.ID) == 0 || !json.Valid(r.ID) || (r.Error == nil) == (r.Result == nil) {
				t.Fatalf("reply %s: id %q", r, r.ID)
			}
			if c := r.ID[0]; c != '"' && c != '-' && (c < '0' || c > '9') && string(r.ID) != "null" {
				t.Fatalf("reply id %s is not a number, a string or null", r.ID)
			}
			if r.Result != nil {
				answered++
			}
		}
		if answered != requests {
			t.Fatalf("%d requests, %d answered", requests, answered)
		}
		if s.hasCurrent || len(s.ids) != 0 || s.inflight != 0 || s.inflightBytes != 0 {
			t.Fatalf("left behind: a request not taken (%v), %d ids, %d requests of %d bytes in flight",
				s.hasCurrent, len(s.ids), s.inflight, s.inflightBytes)
		}
	})
}

// FuzzScanMembers: the quick scan of a frame's body takes only bodies that
// jsontext takes, and reads the same members from them.
func FuzzScanMembers(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"daemon.status"}`,
		` { "jsonrpc" : "2.0" , "id" : -1.5e+3 , "method" : "session.append" , "params" : {"session_id":"s","seq":1,"chunk":"a\u0000<\ud800\"\\"} } `,
		`{"id":[1,{"a":[true,false,null,{}]},[]],"params":{"x":"\xff"}}`,
		`{}`, `{"a":1,"a":2}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":"\x"}`, `{"a":[1,]}`,
		`{"a":1}x`, `[1]`, `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := scanMembers(nil, body)
		if !ok {
			return
		}
		want, wok := decodeMembers(nil, body)
		if !wok {
			t.Fatalf("scanMembers took %q, which jsontext refuses", body)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, jsontext %d", body, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].name, want[i].name) || !bytes.Equal(got[i].value, want[i].value) {
				t.Fatalf("%q: member %d is %s:%s, jsontext %s:%s", body, i, got[i].name, got[i].value, want[i].name, want[i].value)
			}
			checkLong(t, got[i].value, got[i].long)
		}
	})
}

// checkLong checks that what the frame's pass says of value's longest
// string holds: it is a string of value, where jsonstr.Scan reads it as
// long says, and no string of value that starts with a quote outside a
// string is longer (a decoder trusts it in place of its own pass).
func checkLong(t *testing.T, value []byte, long LongString) {
	t.Helper()
	if long.JSON == nil {
		return
	}
	at := -1
	for i := range value {
		if long.At(value[i:]) {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatalf("%q: the longest string %q is not in the value", value, long.JSON)
	}
	n, sc, ok := jsonstr.Scan(value[at:])
	if !ok || n != len(long.JSON) || sc != long.Scanned {
		t.Fatalf("%q: the longest string at %d is %q, %+v; jsonstr.Scan reads %d bytes, %+v, %v", value, at, long.JSON, long.Scanned, n, sc, ok)
	}
	// value is valid JSON: its strings are found by their quotes, and a
	// name is a string followed by a colon.
	for i := 0; i < len(value); i++ {
		if value[i] != '"' {
			continue
		}
		j := i + 1
		for value[j] != '"' {
			if value[j] == '\\' {
				j++
			}
			j++
		}
		if k := jsonstr.SkipSpace(value, j+1); (k >= len(value) || value[k] != ':') && j+1-i > len(long.JSON) {
			t.Fatalf("%q: the string %q is longer than the longest noted, %q", value, value[i:j+1], long.JSON)
		}
		i = j
	}
}
