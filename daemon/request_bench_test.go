package daemon

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

// frames is a connection that reads as frame repeated, and takes whatever
// is written.
type frames struct {
	frame []byte
	at    int
}

func (f *frames) Read(p []byte) (int, error) {
	n := copy(p, f.frame[f.at:])
	f.at = (f.at + n) % len(f.frame)
	return n, nil
}

func (*frames) Write(p []byte) (int, error) { return len(p), nil }
func (*frames) Close() error                { return nil }

// placeholder is what jsonrpc2 would be handed, read not at all: the
// library's own decoding is left out, as is the engine's work.
type placeholder struct{}

func (placeholder) UnmarshalJSON([]byte) error { return nil }

// BenchmarkAppendRequestPath is the daemon's own work for one append
// without the engine's and without jsonrpc2's: the frame read and checked,
// the params decoded (the chunk unquoted, or taken as sent raw), the
// frame's buffer given back, a reply written. Chunks are lines of text, a
// newline escape in each when in JSON.
func BenchmarkAppendRequestPath(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		var text strings.Builder
		for i := 0; text.Len() < size; i++ {
			fmt.Fprintf(&text, "line %09d: the quick brown fox jumps over the lazy dog\n", i)
		}
		content := text.String()[:size]
		const head = `{"jsonrpc":"2.0","id":7,"method":"session.append","params":{"session_id":"0b8e7f0e-6a53-4f57-9d0f-2a1c6f0d2c11","seq":12`
		body := head + `,"chunk":` + string(jsonstr.Quote(nil, content)) + `}}`
		asJSON := "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		body = head + `}}`
		asRaw := "Content-Length: " + strconv.Itoa(len(body)+size) + "\r\n" + protocol.HeaderRawLength + ": " + strconv.Itoa(size) + "\r\n\r\n" + body + content
		for _, form := range []struct{ name, frame string }{{"JSON", asJSON}, {"Raw", asRaw}} {
			conn := &frames{frame: []byte(form.frame)}
			b.Run(strconv.Itoa(size>>10)+"KiB/"+form.name, func(b *testing.B) {
				s := jsonrpc.NewServerStream(conn, jsonrpc.Limits{MaxMessage: 8 << 20}, nil)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if err := s.ReadObject(placeholder{}); err != nil {
						b.Fatal(err)
					}
					req, _ := s.Take()
					id, raw := req.RPCID(), req.Params
					var p *protocol.AppendParams
					var err error
					if raw.Content != nil {
						p, err = appendRawParams(raw.JSON, raw.Content, nil)
					} else {
						p, err = decodeAppend(raw.JSON, raw.Long)
					}
					if err != nil || len(p.Chunk) != size {
						b.Fatalf("decoded %d bytes, %v", len(p.Chunk), err)
					}
					raw.Release()
					resp := &jsonrpc2.Response{ID: id}
					resp.SetResult(true)
					if err := s.WriteObject(resp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

var _ io.ReadWriteCloser = (*frames)(nil)
