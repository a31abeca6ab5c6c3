package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// The daemon is killed (SIGKILL, at an exact point) after a transaction
// made the directories of its new files and before anything was written:
// the next start removes those directories, as a refused or failed commit
// does, and the same transaction then commits.
func TestTxKilledAfterMakingDirectoriesLeavesNone(t *testing.T) {
	d := testdaemon.Start(t)
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=tx.dirsmade=1"}
	d.Restart()
	c := dial(t, d)
	ctx := testCtx(t)
	files := map[string]string{"new/deep/a.txt": "a\n", "other/b.md": "# b\n"}
	names := []string{"new/deep/a.txt", "other/b.md"}
	tx, err := c.TxBegin(ctx, protocol.TxBeginParams{WorkspaceRoot: d.Root, Files: []protocol.BeginParams{
		{TargetFile: names[0], Operation: protocol.OpCreate},
		{TargetFile: names[1], Operation: protocol.OpCreate},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range tx.Sessions {
		if _, err := c.Append(ctx, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: files[names[i]] + s.EndMarker + "\n"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.TxCommit(ctx, protocol.TxCommitParams{TxID: tx.TxID}); err == nil {
		t.Fatal("the commit succeeded although the daemon was to die in it")
	}
	d.Wait()
	if _, err := os.Stat(filepath.Join(d.Root, "new", "deep")); err != nil {
		t.Fatalf("the kill did not land after the directories were made: %v", err)
	}
	d.Env = nil
	d.Restart()
	for _, dir := range []string{"new", "other"} {
		if _, err := os.Stat(filepath.Join(d.Root, dir)); err == nil {
			t.Errorf("%s is still there after the restart\n%s", dir, d.Logs())
		}
	}
	c = dial(t, d)
	if _, err := c.TxCommit(testCtx(t), protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(d.Root, name)); err != nil || string(got) != want {
			t.Errorf("%s after the second commit: %q, %v", name, got, err)
		}
	}
}
