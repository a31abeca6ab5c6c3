package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// txFixture is a three-file transaction: two files replaced, one created.
type txFixture struct {
	root     string
	old, new map[string]string
}

func newTxFixture(t *testing.T, root string) *txFixture {
	f := &txFixture{root: root,
		old: map[string]string{"a.txt": "old a\n", "b.json": "{\"v\": 1}\n"},
		new: map[string]string{"a.txt": "new a\n", "b.json": "{\"v\": 2}\n", "c.md": "# new c\n"}}
	for name, content := range f.old {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// begin opens the transaction and streams every file with its marker.
func (f *txFixture) begin(t *testing.T, c *client.Client) protocol.TxBeginResult {
	t.Helper()
	ctx := testCtx(t)
	names := []string{"a.txt", "b.json", "c.md"}
	tx, err := c.TxBegin(ctx, protocol.TxBeginParams{WorkspaceRoot: f.root, Files: []protocol.BeginParams{
		{TargetFile: names[0], Operation: protocol.OpOverwrite},
		{TargetFile: names[1], Operation: protocol.OpOverwrite},
		{TargetFile: names[2], Operation: protocol.OpCreate},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range tx.Sessions {
		if _, err := c.Append(ctx, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: f.new[names[i]] + s.EndMarker + "\n"}); err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

// state says whether every file is as before the transaction ("old"), as
// after it ("new"), or a mix, with the details.
func (f *txFixture) state(t *testing.T) (string, string) {
	t.Helper()
	var olds, news int
	var details []string
	for _, name := range []string{"a.txt", "b.json", "c.md"} {
		got, err := os.ReadFile(filepath.Join(f.root, name))
		want, wasThere := f.old[name]
		switch {
		case errors.Is(err, os.ErrNotExist) && !wasThere, err == nil && wasThere && string(got) == want:
			olds++
			details = append(details, name+"=old")
		case err == nil && string(got) == f.new[name]:
			news++
			details = append(details, name+"=new")
		default:
			details = append(details, name+"=?"+string(got))
		}
	}
	entries, _ := os.ReadDir(f.root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".orion-tmp-") {
			details = append(details, "temp:"+e.Name())
		}
	}
	detail := strings.Join(details, " ")
	switch {
	case olds == 3:
		return "old", detail
	case news == 3:
		return "new", detail
	}
	return "mix", detail
}

// The daemon is killed (SIGKILL, by an armed failpoint, at an exact point)
// in the middle of a three-file commit and restarted: every file is as
// before the transaction, or, once the commit record was durable, every
// file is new — never a mix.
func TestTxKilledMidCommitIsAllOrNothing(t *testing.T) {
	cases := []struct {
		point     string
		wantAfter string
		midCommit string // the state the kill leaves, before the restart
	}{
		{"tx.committing=1", "old", "old"},
		{"tx.renamed=1", "old", "mix"},
		{"tx.renamed=2", "old", "mix"},
		{"tx.renamed=3", "old", "new"},
		{"tx.committed=1", "new", "new"},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			d := testdaemon.Start(t)
			f := newTxFixture(t, d.Root)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			tx := f.begin(t, c)
			if _, err := c.TxCommit(testCtx(t), protocol.TxCommitParams{TxID: tx.TxID}); err == nil {
				t.Fatal("the commit succeeded although the daemon was to die in it")
			}
			d.Wait()
			if got, detail := f.state(t); got != tc.midCommit {
				t.Fatalf("killed at %s: files are %s (%s), want %s: the kill did not land where intended", tc.point, got, detail, tc.midCommit)
			}
			d.Env = nil
			d.Restart()
			if got, detail := f.state(t); got != tc.wantAfter || strings.Contains(detail, "temp:") {
				t.Fatalf("after restart: %s (%s), want %s\n%s", got, detail, tc.wantAfter, d.Logs())
			}
			c = dial(t, d)
			info, err := c.TxGet(testCtx(t), tx.TxID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantAfter == "new" {
				if info.Stage != protocol.TxCommitted || len(info.Files) != 3 {
					t.Fatalf("tx after restart: %+v", info)
				}
				for _, s := range tx.Sessions {
					if got, _ := c.Get(testCtx(t), s.SessionID); got.Stage != protocol.StageCompleted {
						t.Errorf("session %s is %s after restart", s.SessionID, got.Stage)
					}
				}
				return
			}
			if info.Stage != protocol.TxRolledBack {
				t.Fatalf("tx after restart: %+v", info)
			}
			// Nothing acknowledged was lost: the same transaction commits.
			res, err := c.TxCommit(testCtx(t), protocol.TxCommitParams{TxID: tx.TxID})
			if err != nil {
				t.Fatal(err)
			}
			if got, detail := f.state(t); got != "new" || res.Stage != protocol.TxCommitted {
				t.Fatalf("second commit: %s (%s)", got, detail)
			}
		})
	}
}

// The daemon is killed at an exact point while it undoes a committed
// transaction, and restarted: every file holds what the transaction wrote
// and no session is undone, or, once the undo's record was durable, every
// file is as before the transaction and every session says undone.
func TestTxUndoKilledIsAllOrNothing(t *testing.T) {
	// The commit passes each failpoint once (three renames); the undo is
	// the second pass.
	cases := []struct {
		point     string
		wantAfter string
		midUndo   string // the state the kill leaves, before the restart
	}{
		{"tx.committing=2", "new", "new"},
		{"tx.renamed=4", "new", "mix"},
		{"tx.renamed=6", "new", "old"},
		{"tx.committed=2", "old", "old"},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			d := testdaemon.Start(t)
			f := newTxFixture(t, d.Root)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			tx := f.begin(t, c)
			if _, err := c.TxCommit(testCtx(t), protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Undo(testCtx(t), tx.Sessions[1].SessionID); err == nil {
				t.Fatal("the undo succeeded although the daemon was to die in it")
			}
			d.Wait()
			if got, detail := f.state(t); got != tc.midUndo {
				t.Fatalf("killed at %s: files are %s (%s), want %s: the kill did not land where intended", tc.point, got, detail, tc.midUndo)
			}
			d.Env = nil
			d.Restart()
			if got, detail := f.state(t); got != tc.wantAfter || strings.Contains(detail, "temp:") {
				t.Fatalf("after restart: %s (%s), want %s\n%s", got, detail, tc.wantAfter, d.Logs())
			}
			c = dial(t, d)
			for _, s := range tx.Sessions {
				info, err := c.Get(testCtx(t), s.SessionID)
				if err != nil {
					t.Fatal(err)
				}
				if info.Undone != (tc.wantAfter == "old") {
					t.Errorf("session %s after restart: undone %v with the files %s", s.SessionID, info.Undone, tc.wantAfter)
				}
			}
			if tc.wantAfter == "old" {
				return
			}
			// The undo can be asked again, and then goes through.
			res, err := c.Undo(testCtx(t), tx.Sessions[0].SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if got, detail := f.state(t); got != "old" || len(res.Files) != 3 {
				t.Fatalf("second undo: %s (%s), %d files", got, detail, len(res.Files))
			}
		})
	}
}
