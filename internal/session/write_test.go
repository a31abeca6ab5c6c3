package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// write calls Write with the harness's root as the workspace.
func (h *harness) write(p protocol.WriteParams) (protocol.FinalizeResult, error) {
	h.t.Helper()
	if p.WorkspaceRoot == "" {
		p.WorkspaceRoot = h.root
	}
	return h.mgr.Write(p)
}

func protoErr(t *testing.T, err error, reason string) *protocol.Error {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Data.Reason != reason {
		t.Fatalf("error %v, want reason %s", err, reason)
	}
	return pe
}

// A whole file in one request: one sync of the journal before the reply
// (the session, its content and the backup of what it replaces together,
// in the content log) and no bbolt commit, the file written, the session
// completed, its undo intact across a restart.
func TestWrite(t *testing.T) {
	// The completion rides the next commit; none comes within the test.
	h := newHarnessWith(t, store.Options{DeferDelay: time.Hour})
	target := filepath.Join(h.root, "dir", "a.txt")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("a line of the new file\n", 3000) // 69 KiB: two backup-sized pieces of content

	stats := func() store.Stats {
		st, err := h.st.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	before := stats()
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "dir/a.txt", Operation: protocol.OpOverwrite}, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	after := stats()
	if got := after.Commits - before.Commits; got != 0 {
		t.Errorf("%d bbolt commits before the reply, want 0", got)
	}
	if got := after.Log.Syncs - before.Log.Syncs; got != 1 {
		t.Errorf("%d syncs of the content log before the reply, want 1", got)
	}
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("a.txt: %d bytes, want %d", len(got), len(content))
	}
	if res.Stage != protocol.StageCompleted || res.Lines != 3000 || res.Bytes != int64(len(content)) || res.BackupID != res.SessionID {
		t.Errorf("result %+v", res)
	}
	info, err := h.mgr.Get(res.SessionID)
	if err != nil || info.Stage != protocol.StageCompleted || info.LastSeq != 1 {
		t.Fatalf("session after the write: %+v, %v", info, err)
	}

	// After a restart the session is completed, and undo still has the
	// old content.
	h.close()
	h.open()
	info, err = h.mgr.Get(res.SessionID)
	if err != nil || info.Stage != protocol.StageCompleted {
		t.Fatalf("session after a restart: %+v, %v", info, err)
	}
	if _, err := h.mgr.Undo(res.SessionID); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "old\n" {
		t.Fatalf("after undo: %q", got)
	}
}

func TestWriteCreateAndAppend(t *testing.T) {
	h := newHarness(t)
	if _, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "new/b.txt", Operation: protocol.OpCreate}, Content: "one\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "new/b.txt", Operation: protocol.OpAppend}, Content: "two\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(h.root, "new", "b.txt")); string(got) != "one\ntwo\n" || res.FileBytes != 8 {
		t.Fatalf("b.txt %q, result %+v", got, res)
	}
	_, err = h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "new/b.txt", Operation: protocol.OpCreate}, Content: "x\n"})
	protoErr(t, err, protocol.ReasonTargetExists)
}

// An edit in one request: its content is journaled first, then applied.
func TestWriteEdit(t *testing.T) {
	h := newHarness(t)
	target := filepath.Join(h.root, "c.py")
	if err := os.WriteFile(target, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "c.py", Operation: protocol.OpEdit},
		Content: "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "x = 2\n" {
		t.Fatalf("c.py: %q", got)
	}
}

// Refused before anything was journaled: no session is left, and the
// error names none.
func TestWriteRefusedLeavesNoSession(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		name   string
		p      protocol.WriteParams
		reason string
	}{
		{"TooLarge", protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			Content: strings.Repeat("x", 1<<20+1)}, protocol.ReasonChunkTooLarge},
		{"OutsideRoots", protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "/etc/passwd-orion", Operation: protocol.OpCreate},
			Content: "x\n"}, protocol.ReasonOutsideRoots},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.write(c.p)
			pe := protoErr(t, err, c.reason)
			if pe.Data.SessionID != "" {
				t.Errorf("the error names session %s", pe.Data.SessionID)
			}
			if all := h.mgr.List(true); len(all) != 0 {
				t.Errorf("sessions left: %+v", all)
			}
		})
	}
}

// Content a check refuses is kept as needs_corrections, and the corrected
// write supersedes it.
func TestWriteRefusedByCheck(t *testing.T) {
	h := newHarness(t)
	_, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "c.json", Operation: protocol.OpCreate}, Content: "{\"a\": 1,\n"})
	pe := protoErr(t, err, protocol.ReasonValidationFailed)
	info, err := h.mgr.Get(pe.Data.SessionID)
	if err != nil || info.Stage != protocol.StageNeedsCorrections || info.Bytes != 9 {
		t.Fatalf("refused session: %+v, %v", info, err)
	}
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "c.json", Operation: protocol.OpCreate,
		Supersedes: pe.Data.SessionID}, Content: "{\"a\": 1}\n"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempt != 2 {
		t.Errorf("attempt %d, want 2", res.Attempt)
	}
	if info, _ := h.mgr.Get(pe.Data.SessionID); info.Stage != protocol.StageSuperseded || info.SupersededBy != res.SessionID {
		t.Errorf("the refused session after the corrected write: %+v", info)
	}
	// Both records survive a restart as they stand.
	h.close()
	h.open()
	if info, _ := h.mgr.Get(pe.Data.SessionID); info.Stage != protocol.StageSuperseded {
		t.Errorf("after restart: %+v", info)
	}
}

// An overwrite in one request reads the file it replaces once and uses it
// for every step: the new content takes its line endings, and undo puts
// back all of it, here more than one backup piece.
func TestWriteOverwriteKeepsWhatItReplaces(t *testing.T) {
	h := newHarness(t)
	target := filepath.Join(h.root, "big.txt")
	old := strings.Repeat("an old line, with CRLF\r\n", 15000) // 352 KiB
	if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpOverwrite},
		Content: "one\ntwo\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "one\r\ntwo\r\n" {
		t.Fatalf("big.txt %q, want the old file's line endings", got)
	}
	if _, err := h.mgr.Undo(res.SessionID); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != old {
		t.Fatalf("after undo: %d bytes, want the %d of the old file", len(got), len(old))
	}
}

// An empty file in one request is a file like any other: written, its
// session journaled and completed, still there after a restart.
func TestWriteEmptyFile(t *testing.T) {
	h := newHarness(t)
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "empty.txt", Operation: protocol.OpCreate}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(h.root, "empty.txt")); err != nil || len(got) != 0 {
		t.Fatalf("empty.txt: %q, %v", got, err)
	}
	if res.Stage != protocol.StageCompleted || res.Bytes != 0 {
		t.Fatalf("result %+v", res)
	}
	h.close()
	h.open()
	info, err := h.mgr.Get(res.SessionID)
	if err != nil || info.Stage != protocol.StageCompleted || info.LastSeq != 1 {
		t.Fatalf("session after a restart: %+v, %v", info, err)
	}
}

// Undo of a write over an empty file puts the empty file back.
func TestWriteOverAnEmptyFileUndone(t *testing.T) {
	h := newHarness(t)
	target := filepath.Join(h.root, "was-empty.txt")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "was-empty.txt", Operation: protocol.OpOverwrite},
		Content: "x\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.mgr.Undo(res.SessionID); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(target); err != nil || len(got) != 0 {
		t.Fatalf("after undo: %q, %v; want the empty file back", got, err)
	}
}

// TestWriteAbortedAsItIsListed: a session.write's session can be found by
// its id (session.list, a trace) before its finalize runs. An abort sent
// then either wins, and nothing is written, or finds the write finished;
// it never reports an abort of a file written anyway.
func TestWriteAbortedAsItIsListed(t *testing.T) {
	h := newHarness(t)
	type outcome struct {
		res protocol.AbortResult
		err error
	}
	aborted := make(chan outcome, 1)
	defer session.SetListedHook(func(id string) {
		go func() {
			res, err := h.mgr.Abort(id)
			aborted <- outcome{res, err}
		}()
		// Give the abort the time to take the session first, if it can.
		time.Sleep(20 * time.Millisecond)
	})()
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "raced.txt", Operation: protocol.OpCreate}, Content: "written\n"})
	a := <-aborted
	switch {
	case a.err == nil && h.exists("raced.txt"):
		t.Fatalf("abort reported %+v, and the file was written anyway (write: %+v, %v)", a.res, res, err)
	case a.err == nil && err == nil:
		t.Fatalf("abort reported %+v, and the write succeeded too: %+v", a.res, res)
	case a.err != nil && (err != nil || h.read("raced.txt") != "written\n"):
		t.Fatalf("abort refused (%v), and the write failed: %v", a.err, err)
	}
}
