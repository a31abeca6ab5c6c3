package e2e_test

import (
	"context"
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
