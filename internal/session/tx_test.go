package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

// txFiles begins a transaction over files and streams each its content
// with its end marker.
func (h *harness) txBegin(files []protocol.BeginParams, contents []string) protocol.TxBeginResult {
	h.t.Helper()
	tx, err := h.mgr.TxBegin(protocol.TxBeginParams{WorkspaceRoot: h.root, Files: files})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(tx.Sessions) != len(files) {
		h.t.Fatalf("tx.begin opened %d sessions for %d files", len(tx.Sessions), len(files))
	}
	for i, s := range tx.Sessions {
		h.append(s.SessionID, contents[i]+s.EndMarker+"\n")
	}
	return tx
}

func (h *harness) put(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.root, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) exists(name string) bool {
	_, err := os.Stat(filepath.Join(h.root, name))
	return err == nil
}

func asProtocolError(t *testing.T, err error) *protocol.Error {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a protocol error", err, err)
	}
	return pe
}

// threeFiles is a transaction that creates one file, overwrites another
// and edits a third.
func threeFiles(h *harness) (protocol.TxBeginResult, []string) {
	h.put("b.txt", "old b\n")
	h.put("c.go", goFile)
	files := []protocol.BeginParams{
		{TargetFile: "a.txt", Operation: protocol.OpCreate},
		{TargetFile: "b.txt", Operation: protocol.OpOverwrite},
		{TargetFile: "c.go", Operation: protocol.OpEdit},
	}
	contents := []string{"new a\n", "new b\n", "<<<<<<< SEARCH\n\treturn 1\n=======\n\treturn 2\n>>>>>>> REPLACE\n"}
	return h.txBegin(files, contents), []string{"new a\n", "new b\n", strings.Replace(goFile, "return 1", "return 2", 1)}
}

func TestTxCommitWritesEveryFile(t *testing.T) {
	h := newHarness(t)
	tx, want := threeFiles(h)
	// A member is written only with the others.
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: tx.Sessions[0].SessionID}); asProtocolError(t, err).Data.Reason != protocol.ReasonTxMember {
		t.Fatalf("finalize of a member: %v", err)
	}
	res, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stage != protocol.TxCommitted || len(res.Files) != 3 {
		t.Fatalf("commit result %+v", res)
	}
	for i, name := range []string{"a.txt", "b.txt", "c.go"} {
		if got := h.read(name); got != want[i] {
			t.Errorf("%s = %q, want %q", name, got, want[i])
		}
		if res.Files[i].Stage != protocol.StageCompleted || res.Files[i].TxID != tx.TxID {
			t.Errorf("file %d summary %+v", i, res.Files[i])
		}
	}
	again, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	if err != nil || len(again.Files) != 3 || again.Files[1].FileSHA256 != res.Files[1].FileSHA256 {
		t.Fatalf("a repeated commit should return the same summaries: %+v, %v", again, err)
	}
	// Undoing any member undoes the transaction, as it was written: all
	// of its files.
	u, err := h.mgr.Undo(tx.Sessions[1].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if u.TxID != tx.TxID || len(u.Files) != 3 || u.SessionID != tx.Sessions[1].SessionID || u.TargetFile != res.Files[1].TargetFile {
		t.Fatalf("undo result %+v", u)
	}
	if !u.Files[0].Removed || u.Files[1].Removed || u.Files[1].RestoredBytes != int64(len("old b\n")) {
		t.Errorf("undo files %+v", u.Files)
	}
	if h.exists("a.txt") || h.read("b.txt") != "old b\n" || h.read("c.go") != goFile {
		t.Errorf("undo left a.txt (exists %v), b.txt = %q, c.go = %q", h.exists("a.txt"), h.read("b.txt"), h.read("c.go"))
	}
	for _, s := range tx.Sessions {
		if info, err := h.mgr.Get(s.SessionID); err != nil || !info.Undone {
			t.Errorf("session %s after the undo: %+v, %v", s.SessionID, info, err)
		}
	}
	if _, err := h.mgr.Undo(tx.Sessions[0].SessionID); asProtocolError(t, err).Data.Reason != protocol.ReasonNothingToUndo {
		t.Fatalf("second undo: %v", err)
	}
	assertNoTemps(t, h.root)
	info, err := h.mgr.TxGet(tx.TxID)
	if err != nil || info.Stage != protocol.TxCommitted || len(info.Sessions) != 3 {
		t.Fatalf("tx.get %+v, %v", info, err)
	}
}

// TestTxUndoAllOrNone: when one file of a transaction changed since it was
// written, undoing the transaction is refused and no file is touched.
func TestTxUndoAllOrNone(t *testing.T) {
	h := newHarness(t)
	tx, want := threeFiles(h)
	if _, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
		t.Fatal(err)
	}
	h.put("c.go", "changed by the person\n")
	_, err := h.mgr.Undo(tx.Sessions[0].SessionID)
	pe := asProtocolError(t, err)
	if pe.Data.Reason != protocol.ReasonTargetChanged || pe.Data.TxID != tx.TxID || !strings.HasSuffix(pe.Data.Path, "c.go") {
		t.Fatalf("undo over a changed file: %v (%+v)", err, pe.Data)
	}
	if h.read("a.txt") != want[0] || h.read("b.txt") != want[1] || h.read("c.go") != "changed by the person\n" {
		t.Fatal("a refused undo changed a file")
	}
	if info, _ := h.mgr.Get(tx.Sessions[0].SessionID); info.Undone {
		t.Fatal("a refused undo marked a session undone")
	}
	assertNoTemps(t, h.root)
}

func TestTxRefusedWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.put("b.txt", "old b\n")
	tx := h.txBegin([]protocol.BeginParams{
		{TargetFile: "b.txt", Operation: protocol.OpOverwrite},
		{TargetFile: "conf.json", Operation: protocol.OpCreate},
	}, []string{"new b\n", "{\"a\": [1, 2\n"})
	_, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	pe := asProtocolError(t, err)
	if pe.Code != protocol.CodeTxFailed || len(pe.Data.Files) != 1 || !strings.HasSuffix(pe.Data.Files[0].TargetFile, "conf.json") ||
		pe.Data.Files[0].Validation == nil {
		t.Fatalf("refusal %+v", pe)
	}
	if h.read("b.txt") != "old b\n" || h.exists("conf.json") {
		t.Fatal("a refused transaction wrote a file")
	}
	info, _ := h.mgr.TxGet(tx.TxID)
	if info.Stage != protocol.TxNeedsCorrections {
		t.Fatalf("stage %s", info.Stage)
	}
	if _, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID}); asProtocolError(t, err).Data.Reason != protocol.ReasonTxState {
		t.Fatalf("commit after refusal: %v", err)
	}
	if info, err := h.mgr.TxAbort(tx.TxID); err != nil || info.Stage != protocol.TxAborted {
		t.Fatalf("abort %+v, %v", info, err)
	}
	if s, _ := h.mgr.Get(tx.Sessions[0].SessionID); s.Stage != protocol.StageAborted {
		t.Fatalf("member after abort: %s", s.Stage)
	}
}

func TestTxMissingMarkerLeavesItOpen(t *testing.T) {
	h := newHarness(t)
	tx, err := h.mgr.TxBegin(protocol.TxBeginParams{WorkspaceRoot: h.root, Files: []protocol.BeginParams{
		{TargetFile: "x.txt", Operation: protocol.OpCreate},
		{TargetFile: "y.txt", Operation: protocol.OpCreate},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.append(tx.Sessions[0].SessionID, "x\n"+tx.Sessions[0].EndMarker+"\n")
	h.append(tx.Sessions[1].SessionID, "y, still coming\n")
	_, err = h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	if pe := asProtocolError(t, err); pe.Code != protocol.CodeTxFailed || pe.Data.Files[0].Reason != protocol.ReasonMarkerMissing {
		t.Fatalf("commit before the marker: %+v", pe)
	}
	if h.exists("x.txt") || h.exists("y.txt") {
		t.Fatal("written before every marker arrived")
	}
	h.append(tx.Sessions[1].SessionID, tx.Sessions[1].EndMarker+"\n")
	if _, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
		t.Fatal(err)
	}
	if h.read("x.txt") != "x\n" || h.read("y.txt") != "y, still coming\n" {
		t.Fatal("files after commit")
	}
}

func TestTxBeginRefusesDuplicateTargets(t *testing.T) {
	h := newHarness(t)
	os.Mkdir(filepath.Join(h.root, "sub"), 0o755)
	_, err := h.mgr.TxBegin(protocol.TxBeginParams{WorkspaceRoot: h.root, Files: []protocol.BeginParams{
		{TargetFile: "d.txt", Operation: protocol.OpCreate},
		{TargetFile: "./sub/../d.txt", Operation: protocol.OpOverwrite},
	}})
	if pe := asProtocolError(t, err); pe.Data.Reason != protocol.ReasonDuplicate {
		t.Fatalf("duplicate targets: %+v", pe)
	}
	if len(h.mgr.List(true)) != 0 {
		t.Fatal("a refused tx.begin left sessions")
	}
}

// A commit that fails after some files are in place puts them back.
func TestTxFailureBetweenRenamesRollsBack(t *testing.T) {
	for fail := range 3 {
		h := newHarness(t)
		tx, _ := threeFiles(h)
		restore := session.SetRenameHook(func(i int) error {
			if i == fail {
				return errors.New("injected failure")
			}
			return nil
		})
		_, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
		restore()
		if pe := asProtocolError(t, err); pe.Data.TxID != tx.TxID {
			t.Fatalf("fail at %d: %+v", fail, pe)
		}
		if h.exists("a.txt") || h.read("b.txt") != "old b\n" || h.read("c.go") != goFile {
			t.Fatalf("fail at %d: files not rolled back", fail)
		}
		assertNoTemps(t, h.root)
		info, _ := h.mgr.TxGet(tx.TxID)
		if info.Stage != protocol.TxRolledBack || info.Error == "" {
			t.Fatalf("fail at %d: tx %+v", fail, info)
		}
		// A rolled-back transaction can be committed again.
		if _, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
			t.Fatalf("fail at %d: commit after roll-back: %v", fail, err)
		}
		if h.read("a.txt") != "new a\n" {
			t.Fatalf("fail at %d: second commit", fail)
		}
	}
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".orion-tmp-") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
}

const envelope = `*** Begin Patch
*** Add File: new.txt
+brand new
*** Update File: c.go
@@ func a() int {
-	return 1
+	return 3
*** Delete File: gone.txt
*** Update File: b.txt
*** Move to: moved.txt
@@
-old b
+moved b
*** End Patch
`

func envelopeSession(h *harness) protocol.BeginResult {
	h.put("b.txt", "old b\n")
	h.put("c.go", goFile)
	h.put("gone.txt", "bye\n")
	b := h.begin(protocol.BeginParams{TargetFile: "c.go", Operation: protocol.OpEdit})
	h.append(b.SessionID, envelope+b.EndMarker+"\n")
	return b
}

func TestEnvelopeAppliesEveryFileAndUndoes(t *testing.T) {
	h := newHarness(t)
	b := envelopeSession(h)
	dry, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+brand new", "+\treturn 3", "-bye", "+moved b"} {
		if !strings.Contains(dry.Diff, want) {
			t.Errorf("dry-run diff lacks %q:\n%s", want, dry.Diff)
		}
	}
	if h.exists("new.txt") || !h.exists("gone.txt") {
		t.Fatal("dry run wrote")
	}
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 4 || res.BackupID == "" {
		t.Fatalf("summary files %+v", res.Files)
	}
	if h.read("new.txt") != "brand new\n" || h.read("c.go") != strings.Replace(goFile, "return 1", "return 3", 1) ||
		h.exists("gone.txt") || h.exists("b.txt") || h.read("moved.txt") != "moved b\n" {
		t.Fatal("envelope not applied")
	}
	if _, err := h.mgr.Undo(b.SessionID); err != nil {
		t.Fatal(err)
	}
	if h.exists("new.txt") || h.read("c.go") != goFile || h.read("gone.txt") != "bye\n" ||
		h.read("b.txt") != "old b\n" || h.exists("moved.txt") {
		t.Fatal("undo did not restore every file")
	}
	assertNoTemps(t, h.root)
}

func TestEnvelopeFailureRollsBackEveryFile(t *testing.T) {
	h := newHarness(t)
	b := envelopeSession(h)
	restore := session.SetRenameHook(func(i int) error {
		if i == 3 {
			return errors.New("injected failure")
		}
		return nil
	})
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	restore()
	if err == nil {
		t.Fatal("finalize succeeded despite the failure")
	}
	if h.exists("new.txt") || h.read("c.go") != goFile || h.read("gone.txt") != "bye\n" ||
		h.read("b.txt") != "old b\n" || h.exists("moved.txt") {
		t.Fatal("files not rolled back")
	}
	// The session stays finalizable.
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatal(err)
	}
	if h.read("moved.txt") != "moved b\n" {
		t.Fatal("second finalize")
	}
}

func TestEnvelopeRefusesAPathOutsideTheRoot(t *testing.T) {
	h := newHarness(t)
	h.put("c.go", goFile)
	b := h.begin(protocol.BeginParams{TargetFile: "c.go", Operation: protocol.OpEdit})
	h.append(b.SessionID, "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch\n"+b.EndMarker+"\n")
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if pe := asProtocolError(t, err); pe.Code != protocol.CodePathNotAllowed {
		t.Fatalf("escape: %+v", pe)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.root), "escape.txt")); err == nil {
		t.Fatal("wrote outside the root")
	}
}

// A daemon that stops between the renames (simulated here by a panic that
// unwinds past every clean-up) finds the transaction committing at the
// next start and rolls it back before serving.
func TestTxInterruptedBetweenRenamesRollsBackAtStart(t *testing.T) {
	h := newHarness(t)
	tx, _ := threeFiles(h)
	restore := session.SetRenameHook(func(i int) error {
		if i == 1 {
			panic("crash")
		}
		return nil
	})
	func() {
		defer func() { recover() }()
		h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	}()
	restore()
	if h.read("a.txt") != "new a\n" || h.read("b.txt") != "new b\n" {
		t.Fatal("the simulated crash came before the second rename")
	}
	h.close()
	h.open()
	if h.exists("a.txt") || h.read("b.txt") != "old b\n" || h.read("c.go") != goFile {
		t.Fatal("restart did not roll the transaction back")
	}
	assertNoTemps(t, h.root)
	info, err := h.mgr.TxGet(tx.TxID)
	if err != nil || info.Stage != protocol.TxRolledBack {
		t.Fatalf("tx after restart %+v, %v", info, err)
	}
	if _, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
		t.Fatal(err)
	}
	if h.read("b.txt") != "new b\n" {
		t.Fatal("commit after the roll-back")
	}
}
