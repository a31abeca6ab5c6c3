package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A finalize replies once its file is durable; its completed record and the
// drop of its chunks ride the next commit. These tests kill oriond (SIGKILL,
// by a failpoint) at that next commit, before it is durable, and restart it.
func TestKilledAfterFinalizeReplyBeforeBookkeeping(t *testing.T) {
	t.Run("TargetAsWritten", func(t *testing.T) {
		d, target, first, content := finalizeThenDie(t, nil)
		d.Restart()
		c := dial(t, d)
		info, err := c.Get(testCtx(t), first.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if info.Stage != protocol.StageCompleted {
			t.Fatalf("after restart the session is %s, want completed\n%s", info.Stage, d.Logs())
		}
		// The kill landed before the bookkeeping was durable: recovery,
		// not the journal, completed the session.
		d.WaitLog("completing a finalize the crash interrupted after its rename")
		res, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: first.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		if res.SHA256 != first.SHA256 || res.Bytes != first.Bytes || res.Lines != first.Lines {
			t.Fatalf("summary after restart %+v, the reply before the kill said %+v", res, first)
		}
		if got, _ := os.ReadFile(target); string(got) != content {
			t.Fatalf("target after restart: %q", got)
		}
		assertNoTempFiles(t, filepath.Dir(target))
		// Undo still has what the session replaced.
		if _, err := c.Undo(testCtx(t), first.SessionID); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(target); string(got) != originalContent {
			t.Fatalf("undo of the recovered overwrite left %q", got)
		}
	})

	// The file changed after the reply and before the kill: recovery cannot
	// tell that change from an outside write that raced the finalize, so
	// it keeps the content and the change, and a finalize needs force.
	t.Run("TargetChangedAgain", func(t *testing.T) {
		const edit = "an edit made after the write\n"
		d, target, first, content := finalizeThenDie(t, func(target string) {
			if err := os.WriteFile(target, []byte(edit), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		d.Restart()
		c := dial(t, d)
		info, err := c.Get(testCtx(t), first.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if info.Stage != protocol.StageStreaming || info.Conflict == "" {
			t.Fatalf("after restart: stage %s, conflict %q; want streaming with a conflict\n%s", info.Stage, info.Conflict, d.Logs())
		}
		if got, _ := os.ReadFile(target); string(got) != edit {
			t.Fatalf("recovery changed the target: %q", got)
		}
		d.WaitLog("left the target changed")
		_, err = c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: first.SessionID})
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Data.Reason != protocol.ReasonTargetChanged {
			t.Fatalf("finalize without force: %v, want target_changed", err)
		}
		if got, _ := os.ReadFile(target); string(got) != edit {
			t.Fatalf("a refused finalize changed the target: %q", got)
		}
		res, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: first.SessionID, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(target); string(got) != content || res.SHA256 != first.SHA256 {
			t.Fatalf("forced finalize wrote %q (sha %s, first %s)", got, res.SHA256, first.SHA256)
		}
	})
}

const originalContent = "package kept // before the session\n"

// TestRecoveryNeverRewritesByItself: after the reply, the file is put back
// as it was (an editor's undo, git checkout) and the kill lands before the
// finalize's bookkeeping is durable. Recovery cannot tell that from a crash
// before the rename, so it reopens the session, but the daemon does not
// finalize it again by itself (auto-finalize is off for it): the revert
// stays; a client's finalize writes the content.
func TestRecoveryNeverRewritesByItself(t *testing.T) {
	d, target, first, content := finalizeThenDie(t, func(target string) {
		if err := os.WriteFile(target, []byte(originalContent), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	d.Args = append(d.Args, "--auto-finalize", "200ms", "--idle", "100ms")
	d.Restart()
	c := dial(t, d)
	// A control session, begun after the restart with its marker and
	// never finalized, is written by auto-finalize: once it is, an
	// auto-finalize of the recovered session, armed at the start, would
	// have run too, however slow the machine.
	control := filepath.Join(d.Root, "control.txt")
	cb, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: control, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: cb.SessionID, Seq: 1, Chunk: "control\n" + cb.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got, _ := os.ReadFile(control); string(got) == "control\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control session was not auto-finalized within 30s\n%s", d.Logs())
		}
	}
	if got, _ := os.ReadFile(target); string(got) != originalContent {
		t.Fatalf("the daemon wrote the target by itself after recovery (%d bytes there)\n%s", len(got), d.Logs())
	}
	info, err := c.Get(testCtx(t), first.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Stage != protocol.StageStreaming {
		t.Fatalf("after restart: %s, want streaming (reopened)", info.Stage)
	}
	res, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: first.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != content || res.SHA256 != first.SHA256 {
		t.Fatalf("a client's finalize wrote %q", got)
	}
}

// TestUndoRightAfterFinalize: an undo that comes before the finalize's
// bookkeeping is durable first makes it durable. The kill lands there, so
// nothing was put back yet; after the restart the session is completed and
// its undo works.
func TestUndoRightAfterFinalize(t *testing.T) {
	const content = "new content\n"
	// The bookkeeping must not ride another commit before the undo does:
	// only the failpoint's commit may carry it.
	d, c, target, b := armedOverwrite(t, "store.commit-deferred=1", "undo.txt", content, "--trace=false")
	if _, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Undo(testCtx(t), b.SessionID); err == nil {
		t.Fatalf("undo succeeded although the daemon was to die making the finalize durable\n%s", d.Logs())
	}
	d.Wait()
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("the undo put the file back before the finalize was durable: %q", got)
	}
	d.Env = nil
	d.Restart()
	c = dial(t, d)
	if info, err := c.Get(testCtx(t), b.SessionID); err != nil || info.Stage != protocol.StageCompleted {
		t.Fatalf("after restart: %+v, %v\n%s", info, err, d.Logs())
	}
	if _, err := c.Undo(testCtx(t), b.SessionID); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != originalContent {
		t.Fatalf("undo after restart left %q", got)
	}
}

// finalizeThenDie overwrites a file through a daemon armed to die at the commit
// that carries the finalize's bookkeeping, runs between (if set) after the
// reply, and waits for the daemon to die.
//
// The trace is off: its batches commit every 100 ms, and one armed by the
// finalize's first events could take the bookkeeping, and die, between the
// rename and the reply. Only the deferred writes' timer, a second after the
// rename, commits it then.
func finalizeThenDie(t *testing.T, between func(target string)) (*testdaemon.Daemon, string, protocol.FinalizeResult, string) {
	t.Helper()
	content := "package kept\n\n" + strings.Repeat("// a line of the file\n", 200)
	d, c, target, b := armedOverwrite(t, "store.commit-deferred=1", filepath.Join("src", "kept.go"), content, "--trace=false")
	first, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("target after finalize: %q", got)
	}
	if between != nil {
		between(target)
	}
	d.Wait()
	d.Env = nil
	return d, target, first, content
}

// armedOverwrite starts oriond armed to die at point (extra flags in
// args), puts originalContent at name under its root, and begins an
// overwrite of it with content and the end marker appended, ready to
// finalize.
func armedOverwrite(t *testing.T, point, name, content string, args ...string) (*testdaemon.Daemon, *client.Client, string, protocol.BeginResult) {
	t.Helper()
	d := testdaemon.Start(t)
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=" + point}
	d.Args = append(d.Args, args...)
	d.Restart()
	c := dial(t, d)
	target := filepath.Join(d.Root, name)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte(originalContent), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := c.Begin(testCtx(t), protocol.BeginParams{Intent: "killed at " + point, TargetFile: target, Operation: protocol.OpOverwrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: content + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	return d, c, target, b
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") || strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left in %s: %s", dir, e.Name())
		}
	}
}

// TestKilledBeforeRenameIsFinalizedAgain: a kill after the temp file is
// written and before its rename leaves the temp file, which proves the
// write never landed: recovery removes it and the session is finalized
// again by auto-finalize, with no client (one killed with its daemon).
func TestKilledBeforeRenameIsFinalizedAgain(t *testing.T) {
	const content = "the new content\n"
	d, c, target, b := armedOverwrite(t, "atomicfile.before-rename=1", "late.txt", content)
	if _, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: b.SessionID}); err == nil {
		t.Fatal("finalize succeeded although the daemon was to die before its rename")
	}
	d.Wait()
	if got, _ := os.ReadFile(target); string(got) != originalContent {
		t.Fatalf("the target changed before the rename: %q", got)
	}
	d.Env = nil
	d.Args = append(d.Args, "--auto-finalize", "200ms")
	d.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got, _ := os.ReadFile(target); string(got) == content {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("not finalized again after the restart: %q\n%s", got, d.Logs())
	}
	assertNoTempFiles(t, d.Root)
	c = dial(t, d)
	// The file lands with its rename; the session's stage says so a
	// moment later, once the write has returned.
	var (
		info protocol.SessionInfo
		err  error
	)
	for time.Now().Before(deadline) {
		if info, err = c.Get(testCtx(t), b.SessionID); err != nil || info.Stage == protocol.StageCompleted {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || info.Stage != protocol.StageCompleted {
		t.Fatalf("after the auto-finalize: %+v, %v", info, err)
	}
}
