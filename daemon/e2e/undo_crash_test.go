package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestMergedUndoKilledIsFinishedOrNotBegun: the person edits a file after
// the agent's write, the agent's write is undone three-way around that
// edit, and the daemon is killed (SIGKILL, by a failpoint) inside that
// undo: with the merged file staged but not yet renamed, and with it
// renamed but the session not yet recorded undone. After the restart the
// undo is finished (the file merged, the session undone) or not begun
// (the file as the person left it, the session not undone, and a second
// undo goes through), never half.
func TestMergedUndoKilledIsFinishedOrNotBegun(t *testing.T) {
	before := numbered(20, nil)
	agent := numbered(20, map[int]string{4: "line 4, by the agent"})
	person := numbered(20, map[int]string{4: "line 4, by the agent", 16: "line 16, by the person"})
	merged := numbered(20, map[int]string{16: "line 16, by the person"})
	cases := []struct {
		point    string
		midUndo  string // the file when the kill lands
		finished bool   // after the restart
	}{
		// The undo's record says committing, the merged file is staged
		// and not renamed (the agent's write renamed once before).
		{"atomicfile.before-rename=2", person, false},
		// The merged file is in place; the session is not yet journaled
		// undone: the restart finishes it.
		{failpointUndoApplied + "=1", merged, true},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			path := filepath.Join(d.Root, "undo.txt")
			os.WriteFile(path, []byte(before), 0o644)
			res, err := c.Write(testCtx(t), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite}, Content: agent})
			if err != nil {
				t.Fatal(err)
			}
			personWrites(t, path, person)
			if _, err := c.Undo(testCtx(t), res.SessionID); err == nil {
				t.Fatal("the undo succeeded although the daemon was to die in it")
			}
			d.Wait()
			if got := readFile(t, path); got != tc.midUndo {
				t.Fatalf("killed at %s the file holds %q: the kill did not land where intended", tc.point, got)
			}
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			info, err := c.Get(testCtx(t), res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			assertNoTempFiles(t, d.Root)
			if tc.finished {
				if got := readFile(t, path); got != merged || !info.Undone {
					t.Fatalf("after restart: undone %v, file %q; want the undo finished\n%s", info.Undone, got, d.Logs())
				}
				d.WaitLog("finishing an undo a crash interrupted")
				return
			}
			if got := readFile(t, path); got != person || info.Undone {
				t.Fatalf("after restart: undone %v, file %q; want the undo not begun\n%s", info.Undone, got, d.Logs())
			}
			u, err := c.Undo(testCtx(t), res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != merged || !u.Merged {
				t.Fatalf("second undo: merged %v, file %q", u.Merged, got)
			}
		})
	}
}

// failpointUndoApplied is the failpoint the session engine reaches once an
// undo's files are in place, before its record says so.
const failpointUndoApplied = "undo.applied"

// TestMovedFileUndoKilledIsFinishedOrNotBegun: the undo of a move whose
// moved file the person edited writes two files (the old path back with
// the edits, the new one removed). Killed after both are in place and
// before its record, the restart puts both back as they were before the
// undo; killed after the record, both stay undone.
func TestMovedFileUndoKilledIsFinishedOrNotBegun(t *testing.T) {
	for _, tc := range []struct {
		point    string
		finished bool
	}{{failpointUndoApplied + "=1", false}, {"tx.committed=2", true}} {
		t.Run(tc.point, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			from, to := filepath.Join(d.Root, "from.txt"), filepath.Join(d.Root, "to.txt")
			os.WriteFile(from, []byte(numbered(12, nil)), 0o644)
			res, err := c.Write(testCtx(t), protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: from, WorkspaceRoot: d.Root, Operation: protocol.OpEdit},
				Content: "*** Begin Patch\n*** Update File: from.txt\n*** Move to: to.txt\n*** End Patch\n"})
			if err != nil {
				t.Fatal(err)
			}
			edited := numbered(12, map[int]string{7: "line 7, by the person"})
			personWrites(t, to, edited)
			if _, err := c.Undo(testCtx(t), res.SessionID); err == nil {
				t.Fatal("the undo succeeded although the daemon was to die in it")
			}
			d.Wait()
			// Both kills land with both files in place.
			if _, err := os.Stat(to); !os.IsNotExist(err) || readFile(t, from) != edited {
				t.Fatalf("killed at %s, to.txt %v: the kill did not land where intended", tc.point, err)
			}
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			info, err := c.Get(testCtx(t), res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			_, toErr := os.Stat(to)
			assertNoTempFiles(t, d.Root)
			if tc.finished {
				if !info.Undone || readFile(t, from) != edited || !os.IsNotExist(toErr) {
					t.Fatalf("after restart: undone %v, to.txt %v; want the undo finished\n%s", info.Undone, toErr, d.Logs())
				}
				return
			}
			if info.Undone || readFile(t, to) != edited {
				t.Fatalf("after restart: undone %v; want the undo not begun\n%s", info.Undone, d.Logs())
			}
			if _, err := os.Stat(from); !os.IsNotExist(err) {
				t.Fatalf("after restart the old path exists again (%v): the undo is half done", err)
			}
			if _, err := c.Undo(testCtx(t), res.SessionID); err != nil {
				t.Fatal(err)
			}
			if readFile(t, from) != edited {
				t.Fatalf("second undo: from.txt %q", readFile(t, from))
			}
		})
	}
}
