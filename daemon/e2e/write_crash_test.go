package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestSessionWriteKilledWhileStaged: session.write writes its file into a
// temp file without a name while its record is journaled, and names it only
// after. Killed at each step, the target holds its old content or the new
// one, never anything else, and no temp file is left once the daemon is back:
// before the record is durable nothing of the write had a name; after it,
// recovery finishes the write or leaves the old file.
func TestSessionWriteKilledWhileStaged(t *testing.T) {
	const content = "the new content, written whole\n"
	for _, tc := range []struct {
		name, point string
		op          protocol.Operation
		// named is whether the temp file has a name when the kill
		// comes (recovery removes it then).
		named bool
		// landed is whether the new content must be there after the
		// restart (recovery writes a session.write whose temp file
		// proves it never landed).
		landed bool
	}{
		{"StagedOverwrite", "atomicfile.hidden-synced=1", protocol.OpOverwrite, false, false},
		{"StagedCreate", "atomicfile.hidden-synced=1", protocol.OpCreate, false, false},
		{"JournalWrite", "contentlog.write=1", protocol.OpOverwrite, false, false},
		{"JournalSync", "contentlog.sync=1", protocol.OpOverwrite, false, false},
		{"BeforeRename", "atomicfile.before-rename=1", protocol.OpOverwrite, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			dir := filepath.Join(d.Root, "w")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "f.txt")
			old := ""
			if tc.op == protocol.OpOverwrite {
				old = originalContent
				if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := c.Write(testCtx(t), protocol.WriteParams{
				BeginParams: protocol.BeginParams{Intent: "killed at " + tc.point, TargetFile: target, Operation: tc.op},
				Content:     content,
			})
			if err == nil {
				if tc.point == "atomicfile.hidden-synced=1" {
					t.Skipf("the write was not staged without a name (no O_TMPFILE on this file system?)\n%s", d.Logs())
				}
				t.Fatalf("the write succeeded although the daemon was to die at %s", tc.point)
			}
			d.Wait()
			holds := func(when string) string {
				t.Helper()
				got, err := os.ReadFile(target)
				switch {
				case errors.Is(err, os.ErrNotExist) && old == "":
					return ""
				case err != nil:
					t.Fatalf("%s: %v", when, err)
				case string(got) != old && string(got) != content:
					t.Fatalf("%s the target holds %q: neither the old content nor the new", when, got)
				}
				return string(got)
			}
			if got := holds("after the kill"); got != old {
				t.Fatalf("the target changed before the write's rename: %q", got)
			}
			if !tc.named {
				assertNoTempFiles(t, dir)
			}
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			if tc.landed {
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) && holds("after the restart") != content {
					time.Sleep(20 * time.Millisecond)
				}
				if got := holds("after the restart"); got != content {
					t.Fatalf("recovery did not finish the write: %q\n%s", got, d.Logs())
				}
			} else if got := holds("after the restart"); got != old {
				t.Fatalf("the target changed with no client to ask for it: %q", got)
			}
			assertNoTempFiles(t, dir)
			if tc.landed {
				// The backup of what it replaced was journaled with
				// the content, and indexed only from the log at this
				// start: undo puts the old content back.
				undoWrite(t, c, target, old)
				return
			}
			// The client, which had no reply, writes again: it lands.
			op := tc.op
			if op == protocol.OpCreate {
				op = protocol.OpOverwrite // a create may have been recovered meanwhile
			}
			if _, err := c.Write(testCtx(t), protocol.WriteParams{
				BeginParams: protocol.BeginParams{Intent: "again", TargetFile: target, Operation: op},
				Content:     content,
			}); err != nil {
				t.Fatalf("writing again after the restart: %v", err)
			}
			if got := holds("after writing again"); got != content {
				t.Fatalf("after writing again the target holds %q", got)
			}
			assertNoTempFiles(t, dir)
		})
	}
}

// undoWrite undoes the session that wrote target and checks that the file
// holds want again.
func undoWrite(t *testing.T, c *client.Client, target, want string) {
	t.Helper()
	sessions, err := c.List(testCtx(t), true)
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, s := range sessions {
		if s.TargetFile == target && s.Stage == protocol.StageCompleted {
			id = s.SessionID
		}
	}
	if id == "" {
		t.Fatalf("no completed session wrote %s: %+v", target, sessions)
	}
	if _, err := c.Undo(testCtx(t), id); err != nil {
		t.Fatalf("undo of the write: %v", err)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != want {
		t.Fatalf("after undo the target holds %q, %v; want %q", got, err, want)
	}
}

// TestSessionWriteKilledBeforeIndexCommit: a session.write is acknowledged
// once its record (the session, its content, the backup of the file it
// replaces) is synced to the content log and its file is in place; the
// bbolt commit that indexes the record comes later. Killed as that commit
// takes it, the next start indexes the record from the log: the write is
// completed and its undo puts back the old content.
func TestSessionWriteKilledBeforeIndexCommit(t *testing.T) {
	const content = "the new content, written whole\n"
	d := testdaemon.Start(t)
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=store.index-entry=1"}
	// No trace, whose batches would commit the entry before the kill is
	// armed for it; the deferred entries' timer takes it a second later.
	d.Args = append(d.Args, "--trace=false")
	d.Restart()
	c := dial(t, d)
	target := filepath.Join(d.Root, "f.txt")
	if err := os.WriteFile(target, []byte(originalContent), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Write(testCtx(t), protocol.WriteParams{
		BeginParams: protocol.BeginParams{Intent: "killed as it is indexed", TargetFile: target, Operation: protocol.OpOverwrite},
		Content:     content,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Wait() // the index commit's kill comes on its timer
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("the acknowledged write's target holds %q", got)
	}
	d.Env = nil
	d.Restart()
	c = dial(t, d)
	info, err := c.Get(testCtx(t), res.SessionID)
	if err != nil || info.Stage != protocol.StageCompleted {
		t.Fatalf("session after the restart: %+v, %v\n%s", info, err, d.Logs())
	}
	assertNoTempFiles(t, d.Root)
	undoWrite(t, c, target, originalContent)
}
