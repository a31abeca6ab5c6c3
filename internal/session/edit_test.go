package session_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

const goFile = "package main\n\nfunc a() int {\n\treturn 1\n}\n\nfunc main() {\n\tprintln(a())\n}\n"

func TestPatchAndEditOperations(t *testing.T) {
	tests := []struct {
		name    string
		op      protocol.Operation
		spec    string
		content string
		want    string
	}{
		{"InsertAfterLine", protocol.OpPatch, `{"type":"insert_after_line","line":5}`,
			"\nfunc b() int {\n\treturn 2\n}\n",
			"package main\n\nfunc a() int {\n\treturn 1\n}\n\nfunc b() int {\n\treturn 2\n}\n\nfunc main() {\n\tprintln(a())\n}\n"},
		{"ReplaceLines", protocol.OpPatch, `{"type":"replace_lines","start_line":4,"end_line":4}`,
			"\treturn 42\n",
			strings.Replace(goFile, "return 1", "return 42", 1)},
		{"SearchReplace", protocol.OpEdit, "",
			"<<<<<<< SEARCH\n\treturn 1\n=======\n\treturn 7\n>>>>>>> REPLACE\n",
			strings.Replace(goFile, "return 1", "return 7", 1)},
		{"UnifiedDiff", protocol.OpEdit, "",
			"--- a/m.go\n+++ b/m.go\n@@ -7,3 +7,3 @@\n func main() {\n-\tprintln(a())\n+\tprintln(a() + 1)\n }\n",
			strings.Replace(goFile, "println(a())", "println(a() + 1)", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			os.WriteFile(filepath.Join(h.root, "m.go"), []byte(goFile), 0o644)
			p := protocol.BeginParams{TargetFile: "m.go", Operation: tt.op}
			if tt.spec != "" {
				p.PatchSpec = json.RawMessage(tt.spec)
			}
			b := h.begin(p)
			h.append(b.SessionID, tt.content+b.EndMarker+"\n")
			res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			if got := h.read("m.go"); got != tt.want {
				t.Fatalf("file:\n%s\nwant:\n%s", got, tt.want)
			}
			if res.Edit == nil || !res.Edit.Changed || res.BackupID == "" || res.Operation != tt.op {
				t.Fatalf("summary %+v", res)
			}
		})
	}
}

func TestFailedEditNeedsCorrectionsAndResendIsANoOp(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "m.go"), []byte(goFile), 0o644)
	bad := "<<<<<<< SEARCH\n\treturn 1\n=======\n\treturn 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\n\tprintln(b())\n=======\n\tprintln(c())\n>>>>>>> REPLACE\n"
	b := h.begin(protocol.BeginParams{TargetFile: "m.go", Operation: protocol.OpEdit})
	h.append(b.SessionID, bad+b.EndMarker)
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if c, reason := code(err); c != protocol.CodeEditFailed || reason != protocol.ReasonEditFailed {
		t.Fatalf("edit with an unmatched block: %v", err)
	}
	blocks := err.(*protocol.Error).Data.Edit.Blocks
	if len(blocks) != 2 || blocks[0].Status != "applied" || blocks[1].Status != "no_match" {
		t.Fatalf("per-block statuses %+v", blocks)
	}
	if got := h.read("m.go"); got != goFile {
		t.Fatal("a failed edit changed the file")
	}
	if info, _ := h.mgr.Get(b.SessionID); info.Stage != protocol.StageNeedsCorrections {
		t.Fatalf("stage %s, want needs_corrections", info.Stage)
	}

	good := "<<<<<<< SEARCH\n\treturn 1\n=======\n\treturn 2\n>>>>>>> REPLACE\n"
	for i, want := range []string{"applied", "already_applied"} {
		p := protocol.BeginParams{TargetFile: "m.go", Operation: protocol.OpEdit}
		if i == 0 {
			p.Supersedes = b.SessionID
		}
		nb := h.begin(p)
		h.append(nb.SessionID, good+nb.EndMarker)
		res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: nb.SessionID})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if res.Edit.Blocks[0].Status != want {
			t.Fatalf("round %d: status %s, want %s", i, res.Edit.Blocks[0].Status, want)
		}
	}
	if got := h.read("m.go"); got != strings.Replace(goFile, "return 1", "return 2", 1) {
		t.Fatalf("file after the resend:\n%s", got)
	}
}

// An edit may name a file that does not exist yet, for an envelope that
// adds files; anything else finds it missing at finalize.
func TestEditOfAMissingFile(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "new.go", Operation: protocol.OpEdit})
	h.append(b.SessionID, "*** Begin Patch\n*** Add File: new.go\n+package x\n*** End Patch\n"+b.EndMarker+"\n")
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got := h.read("new.go"); got != "package x\n" {
		t.Fatalf("new.go = %q", got)
	}
	b = h.begin(protocol.BeginParams{TargetFile: "other.go", Operation: protocol.OpEdit})
	h.append(b.SessionID, "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"+b.EndMarker+"\n")
	if _, reason := code(h.finalizeErr(b.SessionID)); reason != protocol.ReasonTargetMissing {
		t.Fatalf("search/replace on a missing file: reason %q", reason)
	}
}

func (h *harness) finalizeErr(id string) error {
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id})
	return err
}

func TestPatchSpecAndMustExistAreCheckedAtBegin(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "m.go"), []byte(goFile), 0o644)
	tests := []struct {
		name   string
		p      protocol.BeginParams
		reason string
	}{
		{"NoSpec", protocol.BeginParams{TargetFile: "m.go", Operation: protocol.OpPatch}, protocol.ReasonInvalidPatchSpec},
		{"UnknownType", protocol.BeginParams{TargetFile: "m.go", Operation: protocol.OpPatch, PatchSpec: json.RawMessage(`{"type":"teleport"}`)}, protocol.ReasonInvalidPatchSpec},
		{"PatchMissingFile", protocol.BeginParams{TargetFile: "nope.go", Operation: protocol.OpPatch, PatchSpec: json.RawMessage(`{"type":"prepend"}`)}, protocol.ReasonTargetMissing},
		{"MustExist", protocol.BeginParams{TargetFile: "nope.go", Operation: protocol.OpOverwrite, MustExist: true}, protocol.ReasonTargetMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.WorkspaceRoot = h.root
			_, err := h.mgr.Begin(tt.p)
			if _, reason := code(err); reason != tt.reason {
				t.Fatalf("err %v, want reason %s", err, tt.reason)
			}
		})
	}
}

// A resent edit that is already applied writes nothing (the file keeps its
// inode) and leaves nothing to undo.
func TestAlreadyAppliedEditWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.put("m.go", strings.Replace(goFile, "return 1", "return 2", 1))
	before, err := os.Stat(filepath.Join(h.root, "m.go"))
	if err != nil {
		t.Fatal(err)
	}
	b := h.begin(protocol.BeginParams{TargetFile: "m.go", Operation: protocol.OpEdit})
	h.append(b.SessionID, "<<<<<<< SEARCH\n\treturn 1\n=======\n\treturn 2\n>>>>>>> REPLACE\n"+b.EndMarker)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NothingWritten || !res.Edit.AlreadyApplied || res.BackupID != "" {
		t.Fatalf("summary %+v: want nothing_written and already_applied", res)
	}
	after, err := os.Stat(filepath.Join(h.root, "m.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("the already-applied edit replaced the file")
	}
	_, err = h.mgr.Undo(b.SessionID)
	if pe := asProtocolError(t, err); pe.Data.Reason != protocol.ReasonNothingToUndo {
		t.Fatalf("undo: %v, want %s", err, protocol.ReasonNothingToUndo)
	}
	if !h.exists("m.go") {
		t.Fatal("undo of an unwritten edit removed the file")
	}
}
