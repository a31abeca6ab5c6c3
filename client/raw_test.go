package client

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// wireFrame is a frame as the client wrote it: its headers, the JSON
// request, and the raw content after it (nil when the frame had none).
type wireFrame struct {
	headers map[string]string
	req     jsonrpc2.Request
	raw     []byte
}

// readWireFrame reads one frame as a daemon that takes raw content does.
func readWireFrame(t *testing.T, server net.Conn, r *bufio.Reader) wireFrame {
	t.Helper()
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	f := wireFrame{headers: map[string]string{}}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a frame's header: %v", err)
		}
		if line == "\r\n" {
			break
		}
		name, value, _ := strings.Cut(strings.TrimSuffix(line, "\r\n"), ":")
		f.headers[name] = strings.TrimSpace(value)
	}
	length, err := strconv.Atoi(f.headers["Content-Length"])
	if err != nil {
		t.Fatalf("Content-Length %q", f.headers["Content-Length"])
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.headers[protocol.HeaderRawLength]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n > length {
			t.Fatalf("%s %q with Content-Length %d", protocol.HeaderRawLength, v, length)
		}
		body, f.raw = body[:length-n], body[length-n:]
	}
	if err := json.Unmarshal(body, &f.req); err != nil {
		t.Fatalf("frame body %q: %v", body, err)
	}
	return f
}

// expectStatus reads the daemon.status the client asks before its first
// large chunk and answers it with features.
func expectStatus(t *testing.T, server net.Conn, r *bufio.Reader, features []string) {
	t.Helper()
	f := readWireFrame(t, server, r)
	if f.req.Method != protocol.MethodDaemonStatus {
		t.Fatalf("the client sent %s first, want %s", f.req.Method, protocol.MethodDaemonStatus)
	}
	reply(t, server, f.req.ID, protocol.StatusResult{Version: "test", Features: features})
}

// appendAsync calls Append on c and returns where its error goes.
func appendAsync(c *Client, p protocol.AppendParams) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Append(context.Background(), p)
		done <- err
	}()
	return done
}

// TestLargeChunksGoRawToADaemonThatTakesThem: the first large chunk makes
// the client ask daemon.status once; from then on chunks that are valid
// UTF-8 go raw after params without a chunk, whatever their size, and a
// chunk that is not valid UTF-8 goes as JSON, where it becomes U+FFFD as
// before.
func TestLargeChunksGoRawToADaemonThatTakesThem(t *testing.T) {
	server, r, c := pipeClient(t)
	big := strings.Repeat("<\"ü\\\x00>\n", rawDiscoverBytes/8+1)
	for i, chunk := range []string{big, "small\n", "", big, "caf\xe9\n"} {
		seq := uint64(i + 1)
		done := appendAsync(c, protocol.AppendParams{SessionID: "s", Seq: seq, Chunk: chunk})
		if i == 0 {
			expectStatus(t, server, r, []string{"something_else", protocol.FeatureRawContent})
		}
		f := readWireFrame(t, server, r)
		if f.req.Method != protocol.MethodSessionAppend || f.req.Params == nil {
			t.Fatalf("chunk %d: request %+v", seq, f.req)
		}
		var params map[string]any
		if err := json.Unmarshal(*f.req.Params, &params); err != nil {
			t.Fatal(err)
		}
		if params["session_id"] != "s" || params["seq"] != float64(seq) {
			t.Fatalf("chunk %d: params %s", seq, *f.req.Params)
		}
		invalid := i == 4
		switch _, inJSON := params["chunk"]; {
		case invalid && (f.raw != nil || !inJSON || params["chunk"] != "caf\uFFFD\n"):
			t.Fatalf("chunk %d, not UTF-8: raw %q, params %s; want it in the JSON, replaced", seq, f.raw, *f.req.Params)
		case !invalid && (f.raw == nil || inJSON || string(f.raw) != chunk):
			t.Fatalf("chunk %d: raw %d bytes (sent %d), params %s; want it raw only", seq, len(f.raw), len(chunk), *f.req.Params)
		}
		reply(t, server, f.req.ID, protocol.AppendResult{SessionID: "s", Seq: seq})
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("chunk %d: %v", seq, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("chunk %d: no return", seq)
		}
	}
}

// TestChunksGoJSONToADaemonWithoutRawContent: a daemon whose status lists no
// raw content (an older one), or that does not answer daemon.status, is
// sent every chunk as JSON, and asked only once per connection.
func TestChunksGoJSONToADaemonWithoutRawContent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, server net.Conn, id jsonrpc2.ID)
	}{
		{"NoFeatures", func(t *testing.T, server net.Conn, id jsonrpc2.ID) {
			reply(t, server, id, protocol.StatusResult{Version: "old", Methods: []string{protocol.MethodSessionAppend}})
		}},
		{"StatusRefused", func(t *testing.T, server net.Conn, id jsonrpc2.ID) {
			replyError(t, server, id, protocol.CodeMethodNotFound, "unknown method")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, r, c := pipeClient(t)
			big := strings.Repeat("x", rawDiscoverBytes)
			for seq := uint64(1); seq <= 3; seq++ {
				done := appendAsync(c, protocol.AppendParams{SessionID: "s", Seq: seq, Chunk: big})
				f := readWireFrame(t, server, r)
				if seq == 1 {
					if f.req.Method != protocol.MethodDaemonStatus {
						t.Fatalf("the first large chunk was sent as %s before asking daemon.status", f.req.Method)
					}
					tc.answer(t, server, f.req.ID)
					f = readWireFrame(t, server, r)
				}
				var p protocol.AppendParams
				if f.req.Method != protocol.MethodSessionAppend || f.raw != nil || json.Unmarshal(*f.req.Params, &p) != nil || p.Chunk != big || p.Seq != seq {
					t.Fatalf("chunk %d: %s with headers %v and %d raw bytes; want it all in JSON", seq, f.req.Method, f.headers, len(f.raw))
				}
				if _, ok := f.headers[protocol.HeaderRawLength]; ok {
					t.Fatalf("chunk %d: sent with %s", seq, protocol.HeaderRawLength)
				}
				reply(t, server, f.req.ID, protocol.AppendResult{SessionID: "s", Seq: seq})
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestSmallChunksAskNothing: chunks under rawDiscoverBytes go as JSON
// without a daemon.status first, so a client sending a few small chunks
// pays no extra round trip.
func TestSmallChunksAskNothing(t *testing.T) {
	server, r, c := pipeClient(t)
	done := appendAsync(c, protocol.AppendParams{SessionID: "s", Seq: 1, Chunk: strings.Repeat("x", rawDiscoverBytes-1)})
	f := readWireFrame(t, server, r)
	if f.req.Method != protocol.MethodSessionAppend || f.raw != nil {
		t.Fatalf("a small chunk was sent as %s with %d raw bytes; want an append in JSON", f.req.Method, len(f.raw))
	}
	reply(t, server, f.req.ID, protocol.AppendResult{SessionID: "s", Seq: 1})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStreamSendsRaw: Stream sends a file's chunks raw once Status said the
// daemon takes them (orionctl write asks it for the chunk size anyway), and
// they add up to the input.
func TestStreamSendsRaw(t *testing.T) {
	server, r, c := pipeClient(t)
	statusDone := make(chan error, 1)
	go func() {
		_, err := c.Status(context.Background())
		statusDone <- err
	}()
	expectStatus(t, server, r, []string{protocol.FeatureRawContent})
	if err := <-statusDone; err != nil {
		t.Fatal(err)
	}
	input := strings.Repeat("line of text ü\n", 10000)
	type outcome struct {
		chunks uint64
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		_, n, err := c.Stream(context.Background(), "s", strings.NewReader(input), StreamOptions{ChunkSize: 32 << 10})
		done <- outcome{n, err}
	}()
	var got strings.Builder
	for seq := uint64(1); got.Len() < len(input); seq++ {
		f := readWireFrame(t, server, r)
		if f.raw == nil {
			t.Fatalf("chunk %d sent without raw content: %s", seq, *f.req.Params)
		}
		got.Write(f.raw)
		reply(t, server, f.req.ID, protocol.AppendResult{SessionID: "s", Seq: seq})
	}
	if out := <-done; out.err != nil || got.String() != input {
		t.Fatalf("Stream = %+v; %d bytes arrived raw, sent %d", out, got.Len(), len(input))
	}
}

// TestWriteSendsContentRaw: session.write's content of a large file goes
// raw after begin's params once the daemon said it takes raw content, and
// a content that is not valid UTF-8 goes as JSON.
func TestWriteSendsContentRaw(t *testing.T) {
	server, r, c := pipeClient(t)
	big := strings.Repeat("x\"\\ é\n", rawDiscoverBytes/5)
	for i, content := range []string{big, big + "\xff"} {
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(context.Background(), protocol.WriteParams{
				BeginParams: protocol.BeginParams{TargetFile: "/w/a.txt", Operation: protocol.OpCreate}, Content: content})
			done <- err
		}()
		if i == 0 {
			expectStatus(t, server, r, []string{protocol.FeatureRawContent})
		}
		f := readWireFrame(t, server, r)
		var p map[string]any
		if f.req.Method != protocol.MethodSessionWrite || json.Unmarshal(*f.req.Params, &p) != nil || p["target_file"] != "/w/a.txt" {
			t.Fatalf("write %d: %s with params %s", i, f.req.Method, *f.req.Params)
		}
		_, inJSON := p["content"]
		if valid := i == 0; valid && (inJSON || string(f.raw) != content) || !valid && (f.raw != nil || !inJSON) {
			t.Fatalf("write %d: %d bytes raw, content in the JSON %v", i, len(f.raw), inJSON)
		}
		reply(t, server, f.req.ID, protocol.FinalizeResult{SessionID: "s"})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// pipeClient is a client on one end of a pipe, and the other end, where the
// test plays the daemon, with a reader of the frames the client sends.
func pipeClient(t *testing.T) (net.Conn, *bufio.Reader, *Client) {
	t.Helper()
	server, conn := net.Pipe()
	t.Cleanup(func() { server.Close() })
	return server, bufio.NewReader(server), newTestClient(t, conn)
}
