package client

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// TestAppendFrameDecodesAsSent checks that an append's frame, with its
// params spliced in by the codec, reads back as the params the caller gave
// (encoding/json's reading, as the daemon's slower paths and other peers
// do), for text that needs every kind of escape.
func TestAppendFrameDecodesAsSent(t *testing.T) {
	chunks := []string{
		"",
		"plain text\n",
		"<script>&amp;</script> \"quoted\" back\\slash\ttab\r\n\x00\x1f\u2028\u2029",
		"unicode: héllo wörld 日本語 🎉\n",
		"orion-params-1", // what a placeholder looks like, as content
	}
	server, conn := net.Pipe()
	defer server.Close()
	c := newTestClient(t, conn)
	r := bufio.NewReader(server)
	for i, chunk := range chunks {
		want := protocol.AppendParams{SessionID: "s-1\"<x>", Seq: uint64(i + 1), Chunk: chunk}
		done := make(chan error, 1)
		go func() {
			_, err := c.Append(context.Background(), want)
			done <- err
		}()
		var req jsonrpc2.Request
		if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(r, &req); err != nil {
			t.Fatalf("chunk %d: reading the frame: %v", i, err)
		}
		if req.Method != protocol.MethodSessionAppend || req.Params == nil {
			t.Fatalf("chunk %d: request %+v", i, req)
		}
		var got protocol.AppendParams
		if err := json.Unmarshal(*req.Params, &got); err != nil {
			t.Fatalf("chunk %d: params %s: %v", i, *req.Params, err)
		}
		if got != want {
			t.Fatalf("chunk %d: params read back as %+v, sent %+v", i, got, want)
		}
		reply(t, server, req.ID, protocol.AppendResult{SessionID: want.SessionID, Seq: want.Seq})
		if err := <-done; err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	if n := len(c.codec.pending); n != 0 {
		t.Fatalf("%d params still held after every append returned", n)
	}
}

// TestInvalidUTF8ChunkSentAsReplacement keeps encoding/json's behaviour for
// bytes that are not UTF-8: each becomes U+FFFD.
func TestInvalidUTF8ChunkSentAsReplacement(t *testing.T) {
	got := appendParamsJSON(protocol.AppendParams{SessionID: "s", Seq: 1, Chunk: "a\xffb"})
	want, _ := json.Marshal(protocol.AppendParams{SessionID: "s", Seq: 1, Chunk: "a\xffb"})
	var g, w protocol.AppendParams
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if g != w {
		t.Fatalf("got %q, encoding/json sends %q", g.Chunk, w.Chunk)
	}
}

func newTestClient(t *testing.T, conn net.Conn) *Client {
	t.Helper()
	codec := newSpliceCodec()
	c := &Client{conn: jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(conn, codec), noHandler{}), codec: codec}
	t.Cleanup(func() { c.Close() })
	return c
}

func reply(t *testing.T, server net.Conn, id jsonrpc2.ID, result any) {
	t.Helper()
	resp := &jsonrpc2.Response{ID: id}
	if err := resp.SetResult(result); err != nil {
		t.Fatal(err)
	}
	server.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := (jsonrpc2.VSCodeObjectCodec{}).WriteObject(server, resp); err != nil {
		t.Fatal(err)
	}
}
