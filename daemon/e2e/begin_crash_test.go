package e2e_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A begun session is journaled with its first chunk, not by begin: the
// chunk's record carries the session's record and the target's content at
// begin. Killed before any bbolt commit indexed that chunk, the daemon
// recreates the session from the chunk's record alone, and a finalize that
// must merge around a person's edit still has the content at begin.
func TestBegunSessionComesBackWithItsFirstChunk(t *testing.T) {
	d := testdaemon.Start(t)
	d.Stop()
	// The first index entry (the chunk's) is never committed: the kill
	// comes as the deferred entries' timer takes it. Without the trace,
	// whose batches commit every 100 ms, no earlier commit takes it.
	d.Env = []string{failpoint.EnvVar + "=store.index-entry=1"}
	d.Args = append(d.Args, "--trace=false")
	d.Restart()
	path, c, ctx, b := beginOverPersonsFile(t, d)
	agent := numbered(30, map[int]string{3: "line 3, by the agent"})
	half := len(agent) / 2
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: agent[:half]}); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	d.Env = nil
	d.Restart()

	c = dial(t, d)
	res, err := c.Resume(ctx, b.SessionID)
	if err != nil {
		t.Fatalf("resume after the kill: %v\n%s", err, d.Logs())
	}
	if res.NextSeq != 2 {
		t.Fatalf("resume after the kill: next_seq %d, want 2 (one chunk acknowledged)", res.NextSeq)
	}
	personWrites(t, path, numbered(30, map[int]string{25: "line 25, by the person"}))
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: agent[half:] + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	fin, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatalf("finalize after the kill: %v", err)
	}
	want := numbered(30, map[int]string{3: "line 3, by the agent", 25: "line 25, by the person"})
	if got := readFile(t, path); got != want {
		t.Fatalf("merged file:\n%s\nwant\n%s", got, want)
	}
	if !fin.Merged {
		t.Fatalf("finalize did not merge with the content at begin: %+v", fin)
	}
}

// A begun session with nothing appended is not journaled: a crash loses
// it, and the client's next append hears session_not_found, as for a
// session that expired.
func TestBegunSessionWithoutContentIsLostToACrash(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "lost.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	// Listed and counted all the same while the daemon runs.
	list, err := c.List(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].SessionID != b.SessionID || list[0].Stage != protocol.StageAwaitingContent {
		t.Fatalf("session.list while the daemon runs: %+v, want the begun session", list)
	}
	if st, err := c.Status(ctx); err != nil || st.OpenSessions != 1 {
		t.Fatalf("daemon.status: %d open sessions (%v), want 1", st.OpenSessions, err)
	}
	d.Kill()
	d.Restart()
	c = dial(t, d)
	_, err = c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "x\n"})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeSessionNotFound || pe.Data.Reason != protocol.ReasonSessionNotFound {
		t.Fatalf("append to a begun session lost to a crash: %v, want %s", err, protocol.ReasonSessionNotFound)
	}
}

// A graceful stop journals begun sessions, so a restart keeps them, with
// the target's content at begin for a merge.
func TestBegunSessionSurvivesAGracefulRestart(t *testing.T) {
	d := testdaemon.Start(t)
	path, _, ctx, b := beginOverPersonsFile(t, d)
	d.Stop()
	d.Restart()
	c := dial(t, d)
	personWrites(t, path, numbered(30, map[int]string{25: "line 25, by the person"}))
	agent := numbered(30, map[int]string{3: "line 3, by the agent"})
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: agent + b.EndMarker + "\n"}); err != nil {
		t.Fatalf("append after a graceful restart: %v\n%s", err, d.Logs())
	}
	fin, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	want := numbered(30, map[int]string{3: "line 3, by the agent", 25: "line 25, by the person"})
	if got := readFile(t, path); got != want || !fin.Merged {
		t.Fatalf("merged %v, file:\n%s\nwant\n%s", fin.Merged, got, want)
	}
}

// beginOverPersonsFile writes a person's 30-line merge.txt in d's root and
// begins an overwrite of it, for tests that must merge around their edit.
func beginOverPersonsFile(t *testing.T, d *testdaemon.Daemon) (string, *client.Client, context.Context, protocol.BeginResult) {
	t.Helper()
	path := filepath.Join(d.Root, "merge.txt")
	personWrites(t, path, numbered(30, nil))
	c := dial(t, d)
	ctx := testCtx(t)
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite})
	if err != nil {
		t.Fatal(err)
	}
	return path, c, ctx, b
}
