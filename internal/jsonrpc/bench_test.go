package jsonrpc

import (
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// BenchmarkReply is the cost WriteObject adds to each reply of an append:
// Typed encodes it from the response jsonrpc2 showed OnSend, ReadBack (the
// way without OnSend) reads back what jsonrpc2 marshals and puts the
// client's id in.
func BenchmarkReply(b *testing.B) {
	s := NewServerStream(&pipeConn{}, Limits{MaxMessage: 1 << 20}, NewParams(), nil)
	resp := &jsonrpc2.Response{ID: jsonrpc2.ID{Num: 7}}
	resp.SetResult(map[string]any{"session_id": "0b8e7f0e-6a53-4f57-9d0f-2a1c6f0d2c11", "seq": 12, "stage": "streaming",
		"bytes": 12288, "lines": 300, "end_marker_seen": false})
	id := []byte(`"req-7"`)
	s.ids[7] = pending{id: id}
	b.Run("Typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeResponse(id, resp); err != nil {
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
