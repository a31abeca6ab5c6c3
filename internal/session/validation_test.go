package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

func (h *harness) writeAll(p protocol.BeginParams, content string) (protocol.BeginResult, protocol.FinalizeResult, error) {
	h.t.Helper()
	b := h.begin(p)
	h.append(b.SessionID, content, "\n"+b.EndMarker+"\n")
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	return b, res, err
}

func TestBrokenJSONIsRefusedUntilACorrectedAttempt(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "cfg.json"), []byte("{\"a\": 1}\n"), 0o644)
	p := protocol.BeginParams{TargetFile: "cfg.json", Operation: protocol.OpOverwrite}
	first, _, err := h.writeAll(p, "{\"a\": 2,\n \"b\": }")
	if c, reason := code(err); c != protocol.CodeValidationFailed || reason != protocol.ReasonValidationFailed {
		t.Fatalf("broken JSON: %v", err)
	}
	pe := err.(*protocol.Error)
	if v := pe.Data.Validation; v == nil || !v.Blocked || len(v.Findings) == 0 || v.Findings[0].Line != 2 || v.Findings[0].Column == 0 {
		t.Fatalf("refusal lacks a finding with line and column: %+v", pe.Data.Validation)
	}
	if got := h.read("cfg.json"); got != "{\"a\": 1}\n" {
		t.Fatalf("refused content touched the target: %q", got)
	}
	info, _ := h.mgr.Get(first.SessionID)
	if info.Stage != protocol.StageNeedsCorrections || info.Validation == nil || info.Bytes == 0 {
		t.Fatalf("refused session %+v: want needs_corrections with its content and findings", info)
	}

	prev := first.SessionID
	for attempt := 2; attempt <= 3; attempt++ {
		p.Supersedes = prev
		b, _, err := h.writeAll(p, "{\"still\": broken")
		if c, _ := code(err); c != protocol.CodeValidationFailed {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if got := err.(*protocol.Error).Data.Attempt; got != attempt {
			t.Fatalf("attempt reported as %d, want %d", got, attempt)
		}
		if old, _ := h.mgr.Get(prev); old.Stage != protocol.StageSuperseded || old.SupersededBy != b.SessionID {
			t.Fatalf("superseded session %+v", old)
		}
		prev = b.SessionID
	}
	p.Supersedes = prev
	p.WorkspaceRoot = h.root
	if _, err := h.mgr.Begin(p); err == nil {
		t.Fatal("a fourth attempt was allowed")
	} else if _, reason := code(err); reason != protocol.ReasonAttemptsExhausted {
		t.Fatalf("fourth attempt: %v", err)
	}
}

func TestCorrectedAttemptIsWritten(t *testing.T) {
	h := newHarness(t)
	p := protocol.BeginParams{TargetFile: "x.yaml", Operation: protocol.OpCreate}
	first, _, err := h.writeAll(p, "a: [1, 2")
	if c, _ := code(err); c != protocol.CodeValidationFailed {
		t.Fatalf("broken YAML: %v", err)
	}
	p.Supersedes = first.SessionID
	_, res, err := h.writeAll(p, "a: [1, 2]")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.read("x.yaml"); got != "a: [1, 2]\n" || res.Attempt != 2 || !res.Validation.SyntaxOK {
		t.Fatalf("file %q, summary %+v", got, res)
	}
}

func TestRepairsAreAppliedAndReported(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "main.go"), []byte("package main\r\n\r\nfunc main() {}\r\n"), 0o644)
	_, res, err := h.writeAll(protocol.BeginParams{TargetFile: "main.go", Operation: protocol.OpOverwrite},
		"```go\npackage main\n\nfunc main() { println(1) }\n```")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.read("main.go"), "package main\r\n\r\nfunc main() { println(1) }\r\n"; got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	kinds := map[string]bool{}
	for _, r := range res.Repairs {
		kinds[r.Kind] = true
	}
	if !kinds["code_fence_removed"] || len(res.Repairs) < 2 {
		t.Fatalf("repairs %+v: want the fence removal and the line-ending match reported", res.Repairs)
	}
}

func TestAlreadyBrokenFileCanStillBeEdited(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "old.json"), []byte("{\n  \"a\": 1,\n  \"b\": 2,\n}\n"), 0o644)
	_, res, err := h.writeAll(protocol.BeginParams{TargetFile: "old.json", Operation: protocol.OpOverwrite}, "{\n  \"a\": 5,\n  \"b\": 2,\n}")
	if err != nil {
		t.Fatalf("an error the original already had blocked the edit: %v", err)
	}
	if len(res.Validation.Findings) == 0 || !res.Validation.Findings[0].Preexisting {
		t.Fatalf("findings %+v: want the old error reported as preexisting", res.Validation.Findings)
	}
}

func TestNewLazyPlaceholderIsRefused(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "a.js"), []byte("function a() {\n  return 1;\n}\n\nfunction b() {\n  return 1;\n}\n"), 0o644)
	// "return 1;" is in the file twice: the elision cannot be placed.
	_, _, err := h.writeAll(protocol.BeginParams{TargetFile: "a.js", Operation: protocol.OpOverwrite},
		"// ... existing code ...\n  return 1;\n// ... rest of code unchanged")
	if c, _ := code(err); c != protocol.CodeValidationFailed || !strings.Contains(err.Error(), "placeholder") {
		t.Fatalf("lazy placeholder: %v", err)
	}
}

func TestElidedWholeFileIsMerged(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "a.js"), []byte("function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n"), 0o644)
	_, res, err := h.writeAll(protocol.BeginParams{TargetFile: "a.js", Operation: protocol.OpOverwrite},
		"function a() {\n  return 3;\n}\n\n// ... rest of code unchanged")
	if err != nil || res.ElisionsMerged != 1 {
		t.Fatalf("err %v, elisions merged %d: want 1", err, res.ElisionsMerged)
	}
	if got := h.read("a.js"); got != "function a() {\n  return 3;\n}\n\nfunction b() {\n  return 2;\n}\n" {
		t.Fatalf("a.js = %q", got)
	}
}

func TestDryRunReturnsTheDiffAndWritesNothing(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "n.txt"), []byte("one\ntwo\n"), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "n.txt", Operation: protocol.OpOverwrite})
	h.append(b.SessionID, "one\nTWO\n"+b.EndMarker)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || !strings.Contains(res.Diff, "-two") || !strings.Contains(res.Diff, "+TWO") {
		t.Fatalf("dry run %+v", res)
	}
	if got := h.read("n.txt"); got != "one\ntwo\n" {
		t.Fatalf("dry run wrote %q", got)
	}
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatalf("finalize after a dry run: %v", err)
	}
	if got := h.read("n.txt"); got != "one\nTWO\n" {
		t.Fatalf("file %q", got)
	}
}

func TestUndoRestoresWhatAFinalizeReplaced(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("original line\n", 40_000) // several backup pieces
	os.WriteFile(filepath.Join(h.root, "u.txt"), []byte(big), 0o600)
	b, res, err := h.writeAll(protocol.BeginParams{TargetFile: "u.txt", Operation: protocol.OpOverwrite}, "new")
	if err != nil {
		t.Fatal(err)
	}
	if res.BackupID != b.SessionID {
		t.Fatalf("no backup reported: %+v", res)
	}
	u, err := h.mgr.Undo(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.read("u.txt"); got != big || u.RestoredBytes != int64(len(big)) {
		t.Fatalf("undo restored %d bytes, want the %d replaced", len(got), len(big))
	}
	if _, err := h.mgr.Undo(b.SessionID); err == nil {
		t.Fatal("a session was undone twice")
	}

	created, _, err := h.writeAll(protocol.BeginParams{TargetFile: "fresh.txt", Operation: protocol.OpCreate}, "x")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.root, "fresh.txt"), []byte("edited since\n"), 0o644)
	if _, err := h.mgr.Undo(created.SessionID); err == nil {
		t.Fatal("undo over a file changed since was allowed")
	} else if c, _ := code(err); c != protocol.CodeTargetChanged {
		t.Fatalf("undo over a changed file: %v", err)
	}
}
