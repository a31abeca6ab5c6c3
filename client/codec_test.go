package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
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
	if n := c.codec.Waiting(); n != 0 {
		t.Fatalf("%d calls still waiting after every append returned", n)
	}
}

// TestInvalidUTF8ChunkSentAsReplacement keeps encoding/json's behaviour for
// bytes that are not UTF-8: each becomes U+FFFD.
func TestInvalidUTF8ChunkSentAsReplacement(t *testing.T) {
	got := appendChunkParams(nil, "s", 1, "a\xffb")
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
	c := newClient(conn, Options{})
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

// TestStreamKeepsAppendsInFlight: Stream sends StreamWindow appends before
// it waits for the first reply, and returns the first error when an append
// fails (the daemon refuses the ones after it as a gap).
func TestStreamKeepsAppendsInFlight(t *testing.T) {
	server, conn := net.Pipe()
	defer server.Close()
	c := newTestClient(t, conn)
	r := bufio.NewReader(server)
	input := strings.Repeat("x", 10*100)
	type outcome struct {
		last   protocol.AppendResult
		chunks uint64
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		last, n, err := c.Stream(context.Background(), "s", strings.NewReader(input), StreamOptions{ChunkSize: 100})
		done <- outcome{last, n, err}
	}()
	read := func() jsonrpc2.Request {
		t.Helper()
		var req jsonrpc2.Request
		if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(r, &req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	// StreamWindow requests arrive with none answered.
	var unanswered []jsonrpc2.Request
	for range StreamWindow {
		unanswered = append(unanswered, read())
	}
	// Answer them one by one; each answer lets one more in, until 10.
	for seq := uint64(1); seq <= 10; seq++ {
		req := unanswered[0]
		unanswered = unanswered[1:]
		var p protocol.AppendParams
		if err := json.Unmarshal(*req.Params, &p); err != nil || p.Seq != seq {
			t.Fatalf("request %d: params %s (%v)", seq, *req.Params, err)
		}
		reply(t, server, req.ID, protocol.AppendResult{SessionID: "s", Seq: seq})
		if seq+StreamWindow <= 10 {
			unanswered = append(unanswered, read())
		}
	}
	out := <-done
	if out.err != nil || out.chunks != 10 || out.last.Seq != 10 {
		t.Fatalf("Stream = %+v", out)
	}

	// A refused append: Stream returns its error, not a later gap.
	go func() {
		last, n, err := c.Stream(context.Background(), "s", strings.NewReader(input), StreamOptions{ChunkSize: 100, FirstSeq: 11})
		done <- outcome{last, n, err}
	}()
	first := read()
	replyError(t, server, first.ID, protocol.CodeTooLarge, "too large")
	for range StreamWindow - 1 {
		replyError(t, server, read().ID, protocol.CodeSeqConflict, "gap")
	}
	out = <-done
	var pe *protocol.Error
	if !errors.As(out.err, &pe) || pe.Code != protocol.CodeTooLarge || out.chunks != 0 {
		t.Fatalf("Stream after a refused append = %+v, want the first error", out)
	}
}

func replyError(t *testing.T, server net.Conn, id jsonrpc2.ID, code int64, msg string) {
	t.Helper()
	resp := &jsonrpc2.Response{ID: id, Error: &jsonrpc2.Error{Code: code, Message: msg}}
	server.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := (jsonrpc2.VSCodeObjectCodec{}).WriteObject(server, resp); err != nil {
		t.Fatal(err)
	}
}

// TestStreamStopsWhenCancelled: after the context ends, Stream sends no
// more chunks and returns the context's error.
func TestStreamStopsWhenCancelled(t *testing.T) {
	server, conn := net.Pipe()
	defer server.Close()
	c := newTestClient(t, conn)
	r := bufio.NewReader(server)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Stream(ctx, "s", strings.NewReader(strings.Repeat("x", 100*100)), StreamOptions{ChunkSize: 100})
		done <- err
	}()
	for range StreamWindow {
		var req jsonrpc2.Request
		if err := (jsonrpc2.VSCodeObjectCodec{}).ReadObject(r, &req); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	// Nothing more arrives: a read that finds a request fails the test.
	extra := make(chan error, 1)
	go func() {
		var req jsonrpc2.Request
		extra <- (jsonrpc2.VSCodeObjectCodec{}).ReadObject(r, &req)
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream after cancel: %v, want context.Canceled", err)
	}
	select {
	case err := <-extra:
		t.Fatalf("a request was sent after the cancel (read: %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
}

// writeParamsJSON reads back as the params it encodes, also into a buffer
// that held the params of a write before (Write reuses them).
func TestWriteParamsJSON(t *testing.T) {
	var b []byte
	for _, p := range []protocol.WriteParams{
		{BeginParams: protocol.BeginParams{TargetFile: "a <&> \"b\".go", Operation: protocol.OpCreate, Intent: "x"}, Content: "line \"1\"\n\t<tag> & \x00 \xff\n"},
		{Content: ""},
		{BeginParams: protocol.BeginParams{TargetFile: "c"}, Content: "short"},
	} {
		var err error
		b, err = writeParamsJSON(b[:0], p)
		if err != nil {
			t.Fatal(err)
		}
		var got protocol.WriteParams
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		want := p
		want.Content = strings.ToValidUTF8(p.Content, "\ufffd")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s read back as %+v, want %+v", b, got, want)
		}
	}
}
