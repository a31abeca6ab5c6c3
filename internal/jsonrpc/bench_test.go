package jsonrpc

import (
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// BenchmarkReply is the cost WriteObject adds to each reply: reading it back
// as a response and putting the client's id in.
func BenchmarkReply(b *testing.B) {
	s := NewServerStream(&pipeConn{}, Limits{MaxMessage: 1 << 20}, NewParams(), nil)
	resp := &jsonrpc2.Response{ID: jsonrpc2.ID{Num: 7}}
	resp.SetResult(map[string]any{"session_id": "0b8e7f0e-6a53-4f57-9d0f-2a1c6f0d2c11", "seq": 12, "stage": "streaming",
		"bytes": 12288, "lines": 300, "end_marker_seen": false})
	data, _ := resp.MarshalJSON()
	s.ids[7] = pending{id: []byte(`"req-7"`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := s.reply(data); !ok {
			b.Fatal("not a reply")
		}
	}
}
