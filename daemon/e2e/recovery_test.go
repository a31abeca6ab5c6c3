package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// notes collects the notifications a client receives.
type notes chan struct {
	method string
	params json.RawMessage
}

func dialWithNotes(t *testing.T, d *testdaemon.Daemon) (*client.Client, notes) {
	t.Helper()
	ch := make(notes, 64)
	c, err := client.Dial(context.Background(), d.Socket, client.Options{
		OnNotification: func(method string, params json.RawMessage) {
			ch <- struct {
				method string
				params json.RawMessage
			}{method, params}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ch
}

// await returns the params of the next notification named method.
func (n notes) await(t *testing.T, method string, v any) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-n:
			if got.method != method {
				continue
			}
			if err := json.Unmarshal(got.params, v); err != nil {
				t.Fatal(err)
			}
			return
		case <-timeout:
			t.Fatalf("no %s notification within 30s", method)
		}
	}
}

func TestIdlePromptTruncationAndContinuationOverTheSocket(t *testing.T) {
	d := testdaemon.Start(t, "--idle", "100ms", "--auto-finalize", "600ms")
	c, ch := dialWithNotes(t, d)
	ctx := testCtx(t)
	begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "story.md", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	first := "# A story\n\nOnce upon a time there was a da"
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: 1, Chunk: first}); err != nil {
		t.Fatal(err)
	}
	var idle protocol.IdleNotification
	ch.await(t, protocol.NotifySessionIdle, &idle)
	if idle.SessionID != begun.SessionID || !strings.Contains(idle.Prompt, begun.EndMarker) {
		t.Fatalf("idle notification %+v", idle)
	}
	var tc protocol.TruncationContext
	ch.await(t, protocol.NotifySessionTruncated, &tc)
	if tc.Lines != 3 || !strings.Contains(tc.ContinuePrompt, "Continue writing story.md from the middle of line 3") {
		t.Fatalf("truncation context %+v", tc)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "story.md")); err == nil {
		t.Fatal("content without its end marker was written over the target")
	}

	next, err := c.Continue(ctx, begun.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	rest := "emon.\nThe end.\n"
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: next.SessionID, Seq: 1, Chunk: rest + next.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: next.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(d.Root, "story.md"))
	if string(got) != first+rest || res.Lines != 4 {
		t.Fatalf("file %q (%d lines), want the two parts joined once", got, res.Lines)
	}
}

func TestSessionsSurviveRestartAndResume(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "r.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, c, begun.SessionID, []string{"one\n", "two\n", "thr"})
	d.Kill()
	d.Restart()
	c = dial(t, d)
	res, err := c.Resume(ctx, begun.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if res.NextSeq != 4 || res.Bytes != 11 || res.Tail != "one\ntwo\nthr" || res.Stage != protocol.StageStreaming {
		t.Fatalf("resume after SIGKILL: %+v", res)
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: 4, Chunk: "ee\n" + begun.EndMarker}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(d.Root, "r.txt")); string(got) != "one\ntwo\nthree\n" {
		t.Fatalf("file %q", got)
	}
}

func TestGracefulStopOnSIGTERM(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "g.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, c, begun.SessionID, []string{"kept\n"})
	d.Stop()
	if _, err := os.Stat(d.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind after SIGTERM: %v", err)
	}
	if !strings.Contains(d.Logs(), "oriond stopped") {
		t.Fatalf("no clean stop in the logs:\n%s", d.Logs())
	}
	d.Restart()
	c = dial(t, d)
	info, err := c.Get(testCtx(t), begun.SessionID)
	if err != nil || info.Bytes != 5 {
		t.Fatalf("session after a graceful restart: %+v %v", info, err)
	}
}
