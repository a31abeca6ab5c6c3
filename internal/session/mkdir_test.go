package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

// A write into directories that do not exist yet makes them, lists them,
// and an undo removes them again.
func TestWriteMakesMissingDirectoriesAndUndoRemovesThem(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "src/pkg/new.go", Operation: protocol.OpCreate})
	h.append(b.SessionID, "package pkg\n"+b.EndMarker+"\n")
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(h.root, "src"), filepath.Join(h.root, "src", "pkg")}
	if !slices.Equal(res.CreatedDirs, want) {
		t.Fatalf("created_dirs = %v, want %v", res.CreatedDirs, want)
	}
	if h.read("src/pkg/new.go") != "package pkg\n" {
		t.Fatal("file not written")
	}
	u, err := h.mgr.Undo(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if !u.Removed || !slices.Equal(u.RemovedDirs, []string{want[1], want[0]}) || h.exists("src") {
		t.Fatalf("undo = %+v; src exists: %v", u, h.exists("src"))
	}
}

// An undo leaves a made directory that holds something else since.
func TestUndoKeepsAMadeDirectoryThatIsNotEmpty(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "docs/a.md", Operation: protocol.OpCreate})
	h.append(b.SessionID, "# A\n"+b.EndMarker+"\n")
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatal(err)
	}
	h.put("docs/b.md", "# B\n")
	if _, err := h.mgr.Undo(b.SessionID); err != nil {
		t.Fatal(err)
	}
	if h.exists("docs/a.md") || h.read("docs/b.md") != "# B\n" {
		t.Fatal("undo removed the wrong things")
	}
}

// A transaction that makes directories and is rolled back removes them.
func TestTxRollBackRemovesMadeDirectories(t *testing.T) {
	h := newHarness(t)
	tx := h.txBegin([]protocol.BeginParams{
		{TargetFile: "new/a.txt", Operation: protocol.OpCreate},
		{TargetFile: "new/deeper/b.txt", Operation: protocol.OpCreate},
	}, []string{"a\n", "b\n"})
	restore := session.SetRenameHook(func(i int) error {
		if i == 1 {
			return errors.New("injected failure")
		}
		return nil
	})
	_, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	restore()
	if err == nil {
		t.Fatal("commit succeeded despite the injected failure")
	}
	if h.exists("new") {
		t.Fatal("the directories made for a rolled-back transaction are still there")
	}
	res, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	if err != nil {
		t.Fatal(err)
	}
	if h.read("new/deeper/b.txt") != "b\n" || len(res.Files[0].CreatedDirs) != 1 || len(res.Files[1].CreatedDirs) != 1 {
		t.Fatalf("second commit: %+v", res.Files)
	}
}

// A transaction one of whose files became protected after begin (a
// repository's piece was put beside it) is refused as a whole at commit,
// and leaves no directory of any of its files behind.
func TestTxRefusedAtCommitLeavesNoDirectories(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(filepath.Join(h.root, "vendor", "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	tx := h.txBegin([]protocol.BeginParams{
		{TargetFile: "new/deep/a.txt", Operation: protocol.OpCreate},
		{TargetFile: "vendor/tool/objects/info/packs", Operation: protocol.OpCreate},
	}, []string{"a\n", "P pack-0.pack\n"})
	h.put("vendor/tool/HEAD", "ref: refs/heads/main\n")
	_, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	pe := asProtocolError(t, err)
	if len(pe.Data.Files) != 1 || pe.Data.Files[0].Reason != protocol.ReasonProtected || !strings.Contains(pe.Data.Files[0].Message, "rule "+pathguard.RuleGitPartial) {
		t.Fatalf("commit = %v, want the second file refused as %s by rule %s", err, protocol.ReasonProtected, pathguard.RuleGitPartial)
	}
	for _, left := range []string{"new", "vendor/tool/objects"} {
		if h.exists(left) {
			t.Errorf("%s is there after the refused commit", left)
		}
	}
}
