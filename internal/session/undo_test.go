package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

func (h *harness) undoErr(id, reason string) *protocol.Error {
	h.t.Helper()
	_, err := h.mgr.Undo(id)
	return protoErr(h.t, err, reason)
}

func (h *harness) undone(id string) bool {
	h.t.Helper()
	info, err := h.mgr.Get(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return info.Undone
}

// TestUndoOfACreatedFile: undoing a create deletes the file only while it
// holds what the session wrote. Edited since, it is refused and the file
// kept; deleted since, the undo has nothing to remove and says so.
func TestUndoOfACreatedFile(t *testing.T) {
	h := newHarness(t)
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "new.txt", Operation: protocol.OpCreate}, Content: lines(6, nil)})
	if err != nil {
		t.Fatal(err)
	}
	edited := lines(6, map[int]string{4: "person's four"})
	h.put("new.txt", edited)
	pe := h.undoErr(res.SessionID, protocol.ReasonTargetChanged)
	if pe.Data.Path != res.TargetFile || pe.Data.ExpectedSHA256 != res.FileSHA256 || pe.Data.ActualSHA256 != sha(edited) {
		t.Fatalf("refusal names %s %s %s", pe.Data.Path, pe.Data.ExpectedSHA256, pe.Data.ActualSHA256)
	}
	if h.read("new.txt") != edited || h.undone(res.SessionID) {
		t.Fatal("a refused undo changed the file or the session")
	}

	// The person put it back as the session wrote it: the undo deletes it.
	h.put("new.txt", lines(6, nil))
	u, err := h.mgr.Undo(res.SessionID)
	if err != nil || !u.Removed || h.exists("new.txt") {
		t.Fatalf("undo: %+v %v, file there %v", u, err, h.exists("new.txt"))
	}

	// Deleted since: nothing to remove, the session is undone all the same.
	res, err = h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "gone.txt", Operation: protocol.OpCreate}, Content: "x\n"})
	if err != nil {
		t.Fatal(err)
	}
	h.remove("gone.txt")
	u, err = h.mgr.Undo(res.SessionID)
	if err != nil || !u.Unchanged || u.Removed || !h.undone(res.SessionID) {
		t.Fatalf("undo of a created file deleted since: %+v %v", u, err)
	}
	h.undoErr(res.SessionID, protocol.ReasonNothingToUndo)
}

// TestUndoWithoutBackupKeepsTheFile: an overwrite that kept no backup
// (backup_required false) cannot be undone; the undo used to take it for
// a create and delete the file.
func TestUndoWithoutBackupKeepsTheFile(t *testing.T) {
	h := newHarness(t)
	h.put("nb.txt", "before\n")
	no := false
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "nb.txt", Operation: protocol.OpOverwrite, BackupRequired: &no}, Content: "after\n"})
	if err != nil {
		t.Fatal(err)
	}
	h.undoErr(res.SessionID, protocol.ReasonNothingToUndo)
	if h.read("nb.txt") != "after\n" {
		t.Fatalf("file after a refused undo: %q", h.read("nb.txt"))
	}
}

func (h *harness) envelope(target, patch string) protocol.FinalizeResult {
	h.t.Helper()
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: target, Operation: protocol.OpEdit}, Content: patch})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// TestUndoOfAMultiFileEditAfterLaterChanges: each file a *** Begin Patch
// edit added, deleted or moved, changed since by someone else.
func TestUndoOfAMultiFileEditAfterLaterChanges(t *testing.T) {
	t.Run("AddedThenEdited", func(t *testing.T) {
		h := newHarness(t)
		h.put("keep.txt", "k\n")
		res := h.envelope("keep.txt", "*** Begin Patch\n*** Add File: added.txt\n"+plus(lines(8, nil))+"*** Update File: keep.txt\n@@\n-k\n+K\n*** End Patch\n")
		edited := lines(8, map[int]string{6: "person's six"})
		h.put("added.txt", edited)
		pe := h.undoErr(res.SessionID, protocol.ReasonTargetChanged)
		if len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].StartLine != 6 || pe.Data.Conflicts[0].File != "person's six\n" || pe.Data.Conflicts[0].Session != "" {
			t.Fatalf("conflicts %+v", pe.Data.Conflicts)
		}
		if h.read("added.txt") != edited || h.read("keep.txt") != "K\n" {
			t.Fatal("a refused undo changed a file")
		}
	})
	t.Run("DeletedThenCreatedAgain", func(t *testing.T) {
		h := newHarness(t)
		h.put("del.txt", "the deleted one\n")
		res := h.envelope("del.txt", "*** Begin Patch\n*** Delete File: del.txt\n*** End Patch\n")
		h.put("del.txt", "a new one\n")
		pe := h.undoErr(res.SessionID, protocol.ReasonTargetChanged)
		if len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].File != "a new one\n" || pe.Data.Conflicts[0].Session != "the deleted one\n" {
			t.Fatalf("conflicts %+v", pe.Data.Conflicts)
		}
		if h.read("del.txt") != "a new one\n" {
			t.Fatal("a refused undo changed the file")
		}
		// Put back as it was: nothing left to do.
		h.put("del.txt", "the deleted one\n")
		u, err := h.mgr.Undo(res.SessionID)
		if err != nil || !u.Unchanged || !h.undone(res.SessionID) || h.read("del.txt") != "the deleted one\n" {
			t.Fatalf("undo: %+v %v", u, err)
		}
	})
	t.Run("MovedThenEdited", func(t *testing.T) {
		h := newHarness(t)
		h.put("from.txt", lines(10, nil))
		res := h.envelope("from.txt", "*** Begin Patch\n*** Update File: from.txt\n*** Move to: to.txt\n@@\n line ii2\n-line iii3\n+agent's three\n line 4\n*** End Patch\n")
		if h.exists("from.txt") || h.read("to.txt") != lines(10, map[int]string{3: "agent's three"}) {
			t.Fatal("the move did not land")
		}
		h.put("to.txt", lines(10, map[int]string{3: "agent's three", 9: "person's nine"}))
		u, err := h.mgr.Undo(res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if want := lines(10, map[int]string{9: "person's nine"}); h.exists("to.txt") || h.read("from.txt") != want {
			t.Fatalf("after the undo: to.txt there %v, from.txt %q", h.exists("to.txt"), h.read("from.txt"))
		}
		if !u.Merged || len(u.MergedHunks) != 1 || u.MergedHunks[0].New != "person's nine\n" {
			t.Fatalf("undo result %+v", u)
		}
	})
	t.Run("RenamedThenEdited", func(t *testing.T) {
		h := newHarness(t)
		h.put("from.txt", lines(10, nil))
		res := h.envelope("from.txt", "*** Begin Patch\n*** Update File: from.txt\n*** Move to: to.txt\n*** End Patch\n")
		edited := lines(10, map[int]string{2: "person's two"})
		h.put("to.txt", edited)
		if _, err := h.mgr.Undo(res.SessionID); err != nil {
			t.Fatal(err)
		}
		if h.exists("to.txt") || h.read("from.txt") != edited {
			t.Fatalf("after the undo: to.txt there %v, from.txt %q", h.exists("to.txt"), h.read("from.txt"))
		}
	})
	t.Run("MovedThenDeleted", func(t *testing.T) {
		h := newHarness(t)
		h.put("from.txt", lines(10, nil))
		res := h.envelope("from.txt", "*** Begin Patch\n*** Update File: from.txt\n*** Move to: to.txt\n@@\n line ii2\n-line iii3\n+agent's three\n line 4\n*** End Patch\n")
		h.remove("to.txt")
		if _, err := h.mgr.Undo(res.SessionID); err != nil {
			t.Fatal(err)
		}
		if h.exists("to.txt") || h.read("from.txt") != lines(10, nil) {
			t.Fatalf("after the undo: to.txt there %v, from.txt %q", h.exists("to.txt"), h.read("from.txt"))
		}
	})
	t.Run("MovedThenEditedAndSourceTaken", func(t *testing.T) {
		h := newHarness(t)
		h.put("from.txt", lines(10, nil))
		res := h.envelope("from.txt", "*** Begin Patch\n*** Update File: from.txt\n*** Move to: to.txt\n@@\n line ii2\n-line iii3\n+agent's three\n line 4\n*** End Patch\n")
		edited := lines(10, map[int]string{3: "agent's three", 9: "person's nine"})
		h.put("to.txt", edited)
		h.put("from.txt", "someone's new file\n")
		pe := h.undoErr(res.SessionID, protocol.ReasonTargetChanged)
		if !strings.Contains(pe.Message, "exists again") {
			t.Fatalf("refusal: %s", pe.Message)
		}
		if h.read("to.txt") != edited || h.read("from.txt") != "someone's new file\n" {
			t.Fatal("a refused undo changed a file")
		}
	})
	t.Run("MovedThenEditedOverTheMove", func(t *testing.T) {
		h := newHarness(t)
		h.put("from.txt", lines(10, nil))
		res := h.envelope("from.txt", "*** Begin Patch\n*** Update File: from.txt\n*** Move to: to.txt\n@@\n line ii2\n-line iii3\n+agent's three\n line 4\n*** End Patch\n")
		edited := lines(10, map[int]string{3: "person's three"})
		h.put("to.txt", edited)
		pe := h.undoErr(res.SessionID, protocol.ReasonTargetChanged)
		if len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].File != "person's three\n" || !strings.Contains(pe.Message, "to.txt") {
			t.Fatalf("refusal %s, conflicts %+v", pe.Message, pe.Data.Conflicts)
		}
		if h.read("to.txt") != edited || h.exists("from.txt") {
			t.Fatal("a refused undo changed a file")
		}
	})
}

// plus prefixes every line of s with "+", as an added file's lines.
func plus(s string) string {
	return "+" + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n+") + "\n"
}

// TestTxUndoOfCreatedFiles: a transaction's undo follows the same rules
// file by file, all or none: a created file someone edited refuses the
// whole undo; one someone deleted is left as it is.
func TestTxUndoOfCreatedFiles(t *testing.T) {
	h := newHarness(t)
	h.put("old.txt", "old\n")
	tx := h.txBegin([]protocol.BeginParams{
		{TargetFile: "old.txt", Operation: protocol.OpOverwrite},
		{TargetFile: "made.txt", Operation: protocol.OpCreate},
	}, []string{"new\n", "made\n"})
	if _, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
		t.Fatal(err)
	}
	h.put("made.txt", "made, and edited\n")
	pe := h.undoErr(tx.Sessions[0].SessionID, protocol.ReasonTargetChanged)
	if pe.Data.Path != h.abs("made.txt") || pe.Data.TxID != tx.TxID {
		t.Fatalf("refusal names %s in %s", pe.Data.Path, pe.Data.TxID)
	}
	if h.read("old.txt") != "new\n" || h.read("made.txt") != "made, and edited\n" {
		t.Fatal("a refused undo changed a file")
	}
	h.remove("made.txt")
	u, err := h.mgr.Undo(tx.Sessions[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if h.read("old.txt") != "old\n" || h.exists("made.txt") || len(u.Files) != 2 || !u.Files[1].Unchanged || u.Files[0].Unchanged {
		t.Fatalf("undo %+v", u)
	}
	for _, s := range tx.Sessions {
		if !h.undone(s.SessionID) {
			t.Fatalf("session %s not undone", s.SessionID)
		}
	}
}

func (h *harness) remove(name string) {
	h.t.Helper()
	if err := os.Remove(h.abs(name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) abs(name string) string { return filepath.Join(h.root, name) }

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestUndoOfACreatedUTF16FileShowsText: a file in UTF-16 that an edit
// added and someone changed since is not deleted, and the refusal shows the
// person's change as the text it is, not as UTF-16 bytes.
func TestUndoOfACreatedUTF16FileShowsText(t *testing.T) {
	h := newHarness(t)
	h.put(".gitattributes", "*.w16 working-tree-encoding=UTF-16LE\n")
	utf16le := func(s string) string {
		var b []byte
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8))
		}
		return string(b)
	}
	h.put("keep.txt", "k\n")
	res := h.envelope("keep.txt", "*** Begin Patch\n*** Add File: made.w16\n"+plus(lines(8, nil))+"*** Update File: keep.txt\n@@\n-k\n+K\n*** End Patch\n")
	if got := h.read("made.w16"); got != utf16le(lines(8, nil)) {
		t.Fatalf("created file %q, want it in UTF-16LE", got)
	}
	edited := utf16le(lines(8, map[int]string{6: "person's six"}))
	h.put("made.w16", edited)
	pe := h.undoErr(res.SessionID, protocol.ReasonTargetChanged)
	if len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].StartLine != 6 || pe.Data.Conflicts[0].File != "person's six\n" || pe.Data.Conflicts[0].Base != "line ii6\n" {
		t.Fatalf("conflicts %+v", pe.Data.Conflicts)
	}
	if h.read("made.w16") != edited {
		t.Fatal("a refused undo changed the file")
	}
}
