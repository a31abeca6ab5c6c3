package jsonrpc

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// BenchmarkReply is the cost WriteObject adds to each reply of an append:
// Typed encodes it from the response jsonrpc2 showed OnSend, ReadBack (the
// way without OnSend) reads back what jsonrpc2 marshals and puts the
// client's id in.
func BenchmarkReply(b *testing.B) {
	s := NewServerStream(&pipeConn{}, Limits{MaxMessage: 1 << 20}, nil)
	resp := &jsonrpc2.Response{ID: jsonrpc2.ID{Num: 7}}
	resp.SetResult(map[string]any{"session_id": "0b8e7f0e-6a53-4f57-9d0f-2a1c6f0d2c11", "seq": 12, "stage": "streaming",
		"bytes": 12288, "lines": 300, "end_marker_seen": false})
	id := []byte(`"req-7"`)
	s.ids[7] = newPending(id, 0)
	b.Run("Typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeResponse(nil, id, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadBack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := resp.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			if _, _, ok := s.reply(data); !ok {
				b.Fatal("not a reply")
			}
		}
	})
}

// discard is a message that takes any JSON and keeps nothing of it.
type discard struct{}

func (discard) UnmarshalJSON([]byte) error { return nil }

// BenchmarkRequestRead is what reading one 4 KiB append costs on the read
// loop before the handler sees it: Stream is the stream's own work (frame,
// checks, params set aside), JSONRPC2 the same requests read by the
// jsonrpc2.Conn the daemon runs, which decodes the placeholder the stream
// hands it ({"method":""}) with encoding/json, twice, into generic values.
// The difference is the library's share of an append.
func BenchmarkRequestRead(b *testing.B) {
	chunk := strings.Repeat(strings.Repeat("x", 63)+`\n`, 64)
	req := frame(`{"jsonrpc":"2.0","id":1,"method":"session.append","params":{"session_id":"0b8e7f0e-6a53-4f57-9d0f-2a1c6f0d2c11","seq":12,"chunk":"` + chunk + `"}}`)
	input := func(n int) io.Reader { return &repeatReader{frame: req, left: n} }
	b.Run("Stream", func(b *testing.B) {
		s := NewServerStream(&pipeConn{in: input(b.N)}, Limits{MaxMessage: 1 << 20}, nil)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := s.ReadObject(discard{}); err != nil {
				b.Fatal(err)
			}
			req, _ := s.Take()
			s.forget(req.ID)
		}
	})
	b.Run("JSONRPC2", func(b *testing.B) {
		s := NewServerStream(&pipeConn{in: input(b.N)}, Limits{MaxMessage: 1 << 20}, nil)
		done := make(chan struct{})
		n := 0
		b.ReportAllocs()
		b.ResetTimer()
		rpc := jsonrpc2.NewConn(context.Background(), s, handlerFunc(
			func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {
				req, _ := s.Take()
				s.forget(req.ID)
				if n++; n == b.N {
					close(done)
				}
			}))
		defer rpc.Close()
		<-done
	})
}

// repeatReader reads as frame repeated left times.
type repeatReader struct {
	frame string
	left  int
	at    int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.frame[r.at:])
	if r.at += n; r.at == len(r.frame) {
		r.at, r.left = 0, r.left-1
	}
	return n, nil
}
