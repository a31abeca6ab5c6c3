package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A heavy read (a listing, a session's content) whose client closes its
// connection stops where it is instead of running to a reply nobody
// reads, and the daemon goes on serving the others, that same read
// included. The failpoint holds the read at a step of its work until its
// client is gone, so that the read must notice by itself, at its next
// step, that nobody waits for it.
func TestHeavyReadStopsWhenItsClientGoes(t *testing.T) {
	for _, tc := range []struct {
		method, point string
		call          func(context.Context, *client.Client, string) error
	}{
		{protocol.MethodSessionContent, "session.content.chunk", func(ctx context.Context, c *client.Client, id string) error {
			_, err := c.Content(ctx, protocol.ContentParams{SessionID: id})
			return err
		}},
		{protocol.MethodSessionList, "session.list.scan", func(ctx context.Context, c *client.Client, _ string) error {
			_, err := c.ListPage(ctx, protocol.ListParams{All: true})
			return err
		}},
		{protocol.MethodTraceList, "trace.list.scan", func(ctx context.Context, c *client.Client, _ string) error {
			var res protocol.TraceListResult
			return c.Call(ctx, protocol.MethodTraceList, protocol.TraceListParams{}, &res)
		}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			d := testdaemon.StartEnv(t, []string{failpoint.EnvVar + "=" + tc.point + "=1:wait"})
			ctx := testCtx(t)
			other := dial(t, d)
			begun, err := other.Begin(ctx, protocol.BeginParams{TargetFile: "a.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: 1, Chunk: strings.Repeat("line\n", 1000)}); err != nil {
				t.Fatal(err)
			}

			gone, err := client.Dial(ctx, d.Socket, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			callErr := make(chan error, 1)
			go func() { callErr <- tc.call(ctx, gone, begun.SessionID) }()
			waitForLog(t, d, "failpoint "+tc.point+": holding")
			// Held there, the read stops no one else.
			if _, err := other.Status(ctx); err != nil {
				t.Fatalf("status while a read is held: %v", err)
			}
			gone.Close()
			if err := <-callErr; err == nil {
				t.Fatal("the call whose connection closed returned no error")
			}
			waitForLog(t, d, "request abandoned: its connection closed")
			if logs := d.Logs(); !strings.Contains(logs, "method="+tc.method) {
				t.Fatalf("the abandoned request is not logged with method=%s:\n%s", tc.method, logs)
			}

			// The same read for a client that stays is answered (the
			// failpoint held only the first), and its heavy reply's slot
			// was given back.
			for range 4 {
				if err := tc.call(ctx, other, begun.SessionID); err != nil {
					t.Fatalf("%s for a client that stayed: %v", tc.method, err)
				}
			}
		})
	}
}

// waitForLog waits until the daemon's log holds want.
func waitForLog(t *testing.T, d *testdaemon.Daemon, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(d.Logs(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's log never said %q:\n%s", want, d.Logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A client that cancels its listing with $/cancelRequest, as vscode-jsonrpc
// does when a request's token fires, gets request_cancelled for it while
// the listing is held in its work, and its connection goes on: a
// cancellation of an id that is not pending is ignored, unanswered.
func TestHeavyReadCancelledByItsClient(t *testing.T) {
	d := testdaemon.StartEnv(t, []string{failpoint.EnvVar + "=session.list.scan=1:wait"})
	ctx := testCtx(t)
	if _, err := dial(t, d).Begin(ctx, protocol.BeginParams{TargetFile: "a.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}); err != nil {
		t.Fatal(err)
	}
	c := dialFrames(t, d)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"session.list","params":{"all":true}}`)
	waitForLog(t, d, "failpoint session.list.scan: holding")
	c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"7"}}`) // not the id sent: 7 is a number
	c.send(`{"jsonrpc":"2.0","id":8,"method":"daemon.status"}`)
	if r := c.reply(); string(r.ID) != "8" || r.Error != nil {
		t.Fatalf("status while the listing is held: %s", r)
	}
	c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`)
	r := c.reply()
	if string(r.ID) != "7" || r.Error == nil || r.Error.Code != protocol.CodeRequestCancelled ||
		r.Error.Data.Reason != protocol.ReasonRequestCancelled || r.Error.Data.Method != protocol.MethodSessionList {
		t.Fatalf("the cancelled listing answered %s, want request_cancelled", r)
	}
	waitForLog(t, d, "request cancelled by its client")
	c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`) // answered already
	c.send(`{"jsonrpc":"2.0","id":9,"method":"session.list","params":{"all":true}}`)
	if r := c.reply(); string(r.ID) != "9" || r.Error != nil || !strings.Contains(string(r.Result), "a.txt") {
		t.Fatalf("the same listing after the cancelled one: %s", r)
	}
}

// frameConn speaks JSON-RPC to the daemon frame by frame, as a client
// library other than ours would.
type frameConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dialFrames(t testing.TB, d *testdaemon.Daemon) *frameConn {
	t.Helper()
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &frameConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *frameConn) send(body string) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c.c, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		c.t.Fatal(err)
	}
}

// frameReply is a reply as it came over the wire, its id untouched.
type frameReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *protocol.Error `json:"error"`
}

func (r frameReply) String() string {
	if r.Error != nil {
		return fmt.Sprintf("id %s: code %d, reason %s, method %s: %s", r.ID, r.Error.Code, r.Error.Data.Reason, r.Error.Data.Method, r.Error.Message)
	}
	return fmt.Sprintf("id %s: result %.200s", r.ID, r.Result)
}

// reply reads the next frame.
func (c *frameConn) reply() frameReply {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(time.Minute))
	length := -1
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading a reply: %v", err)
		}
		if line == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, max(length, 0))
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	var r frameReply
	if err := json.Unmarshal(body, &r); err != nil {
		c.t.Fatalf("reply %q: %v", body, err)
	}
	return r
}
