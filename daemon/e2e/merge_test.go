package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// numbered is a file of n lines, "line 1" to "line n".
func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// personWrites writes content to path from another process, as an editor
// the person uses would: sh writes a temp file and renames it over.
func personWrites(t *testing.T, path, content string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `cat > "$1.person" && mv "$1.person" "$1"`, "sh", path)
	cmd.Stdin = strings.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing %s from another process: %v: %s", path, err, out)
	}
}

func protoErr(t *testing.T, err error) *protocol.Error {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a protocol error", err)
	}
	return pe
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStaleExpectedSHA256IsRefused: a write based on content the file no
// longer holds is refused before anything is written, on every way in.
func TestStaleExpectedSHA256IsRefused(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "stale.txt")
	os.WriteFile(path, []byte("what the person has now\n"), 0o644)
	stale := hashOf("what the agent read\n")
	actual := hashOf("what the person has now\n")

	check := func(name string, err error) {
		t.Helper()
		wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
		pe := protoErr(t, err)
		if pe.Data.ExpectedSHA256 != stale || pe.Data.ActualSHA256 != actual {
			t.Fatalf("%s: error names %q and %q, want %s and %s", name, pe.Data.ExpectedSHA256, pe.Data.ActualSHA256, stale, actual)
		}
		if !strings.Contains(pe.Message, stale) || !strings.Contains(pe.Message, actual) {
			t.Fatalf("%s: message does not name both hashes: %s", name, pe.Message)
		}
		if got := readFile(t, path); got != "what the person has now\n" {
			t.Fatalf("%s: file became %q", name, got)
		}
	}
	_, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: stale})
	check("begin", err)
	_, err = c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: stale}, Content: "agent's\n"})
	check("write", err)
	_, err = c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpEdit, ExpectedSHA256: stale},
		Content: "<<<<<<< SEARCH\nwhat the person has now\n=======\nagent's\n>>>>>>> REPLACE\n"})
	check("edit", err)
	_, err = c.TxBegin(ctx, protocol.TxBeginParams{Files: []protocol.BeginParams{
		{TargetFile: filepath.Join(d.Root, "other.txt"), Operation: protocol.OpCreate},
		{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: stale},
	}})
	check("transaction", err)
	if _, err := os.Stat(filepath.Join(d.Root, "other.txt")); !os.IsNotExist(err) {
		t.Fatalf("the transaction's other file exists: %v", err)
	}
	_, err = c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: filepath.Join(d.Root, "new.txt"), Operation: protocol.OpOverwrite, ExpectedSHA256: stale}, Content: "x\n"})
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	if pe := protoErr(t, err); pe.Data.ActualSHA256 != protocol.AbsentSHA256 {
		t.Fatalf("an absent file's hash reads %q", pe.Data.ActualSHA256)
	}

	// The right hash: written, and the results say what they read and wrote.
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: actual})
	if err != nil {
		t.Fatal(err)
	}
	if b.SHA256 != actual {
		t.Fatalf("begin returned sha256 %q, want %s", b.SHA256, actual)
	}
	c.Abort(ctx, b.SessionID)
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: actual}, Content: "agent's\n"})
	if err != nil {
		t.Fatal(err)
	}
	if res.FileSHA256 != hashOf("agent's\n") || readFile(t, path) != "agent's\n" {
		t.Fatalf("write with the right hash: sha256 %s, file %q", res.FileSHA256, readFile(t, path))
	}
	_, err = c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: filepath.Join(d.Root, "created.txt"), Operation: protocol.OpCreate, ExpectedSHA256: protocol.AbsentSHA256}, Content: "x\n"})
	if err != nil {
		t.Fatalf("create expecting an absent file: %v", err)
	}
	_, err = c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite, ExpectedSHA256: "not-a-hash"})
	wantCode(t, err, protocol.CodeInvalidParams, protocol.ReasonMalformedParams)
}

// TestFinalizeMergesAroundAPersonsEdit: while the agent streams a new
// version of a file, the person edits another part of it in another
// process. The finalize keeps both and says so, with the person's hunk.
func TestFinalizeMergesAroundAPersonsEdit(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "merge.txt")
	os.WriteFile(path, []byte(numbered(30, nil)), 0o644)

	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite})
	if err != nil {
		t.Fatal(err)
	}
	agent := numbered(30, map[int]string{3: "line 3, by the agent"})
	half := len(agent) / 2
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: agent[:half]}); err != nil {
		t.Fatal(err)
	}
	personWrites(t, path, numbered(30, map[int]string{25: "line 25, by the person"}))
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: agent[half:] + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	want := numbered(30, map[int]string{3: "line 3, by the agent", 25: "line 25, by the person"})
	if got := readFile(t, path); got != want {
		t.Fatalf("merged file:\n%s\nwant\n%s", got, want)
	}
	if !res.Merged || len(res.MergedHunks) != 1 {
		t.Fatalf("result merged %v with hunks %+v, want the person's one hunk", res.Merged, res.MergedHunks)
	}
	if h := res.MergedHunks[0]; h.StartLine != 25 || h.EndLine != 25 || h.Old != "line 25\n" || h.New != "line 25, by the person\n" {
		t.Fatalf("person's hunk %+v", h)
	}
	if res.FileSHA256 != hashOf(want) {
		t.Fatalf("file_sha256 %s is not the merged content's", res.FileSHA256)
	}

	// Undo after a later edit: the agent's change goes, the later one stays.
	personWrites(t, path, numbered(30, map[int]string{3: "line 3, by the agent", 25: "line 25, by the person", 12: "line 12, later"}))
	u, err := c.Undo(ctx, b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	want = numbered(30, map[int]string{25: "line 25, by the person", 12: "line 12, later"})
	if got := readFile(t, path); got != want {
		t.Fatalf("undo around a later edit left:\n%s\nwant\n%s", got, want)
	}
	if !u.Merged || u.SHA256 != hashOf(want) || len(u.MergedHunks) != 1 || u.MergedHunks[0].New != "line 12, later\n" {
		t.Fatalf("undo result %+v", u)
	}
}

// TestFinalizeOverlapIsRefusedWithHunks: the person changed the lines the
// agent changed: nothing is written, the file keeps the person's version
// (no conflict markers), and the error carries both sides of each region.
func TestFinalizeOverlapIsRefusedWithHunks(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "overlap.txt")
	os.WriteFile(path, []byte(numbered(10, nil)), 0o644)
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: numbered(10, map[int]string{5: "agent's five"}) + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	person := numbered(10, map[int]string{5: "person's five"})
	personWrites(t, path, person)
	_, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	pe := protoErr(t, err)
	if len(pe.Data.Conflicts) != 1 {
		t.Fatalf("conflicts %+v", pe.Data.Conflicts)
	}
	if cf := pe.Data.Conflicts[0]; cf.StartLine != 5 || cf.EndLine != 5 || cf.Base != "line 5\n" || cf.File != "person's five\n" || cf.Session != "agent's five\n" {
		t.Fatalf("conflict %+v", cf)
	}
	if pe.Data.ExpectedSHA256 != b.SHA256 || pe.Data.ActualSHA256 != hashOf(person) {
		t.Fatalf("error hashes %s %s", pe.Data.ExpectedSHA256, pe.Data.ActualSHA256)
	}
	if got := readFile(t, path); got != person {
		t.Fatalf("file after a refused merge: %q", got)
	}
}

// TestEditAppliesAgainAfterAChange: a search/replace edit whose target the
// person changed elsewhere is applied to the file as it is now.
func TestEditAppliesAgainAfterAChange(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "edit.txt")
	os.WriteFile(path, []byte(numbered(10, nil)), 0o644)
	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpEdit})
	if err != nil {
		t.Fatal(err)
	}
	personWrites(t, path, numbered(10, map[int]string{9: "line 9, by the person"}))
	edit := "<<<<<<< SEARCH\nline 2\n=======\nline 2, by the agent\n>>>>>>> REPLACE\n"
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: edit + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if want := numbered(10, map[int]string{2: "line 2, by the agent", 9: "line 9, by the person"}); readFile(t, path) != want {
		t.Fatalf("file %q", readFile(t, path))
	}
	if !res.Merged || len(res.MergedHunks) != 1 || res.MergedHunks[0].StartLine != 9 {
		t.Fatalf("result merged %v hunks %+v", res.Merged, res.MergedHunks)
	}
}

// TestTransactionMergesAndUndoesAroundEdits: a transaction's file the
// person changed meanwhile is merged at commit, and the transaction's undo
// after a later edit reverts only its own changes, in every file.
func TestTransactionMergesAndUndoesAroundEdits(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	a, b := filepath.Join(d.Root, "tx-a.txt"), filepath.Join(d.Root, "tx-b.txt")
	os.WriteFile(a, []byte(numbered(20, nil)), 0o644)
	os.WriteFile(b, []byte(numbered(20, nil)), 0o644)
	tx, err := c.TxBegin(ctx, protocol.TxBeginParams{Files: []protocol.BeginParams{
		{TargetFile: a, Operation: protocol.OpOverwrite},
		{TargetFile: b, Operation: protocol.OpOverwrite},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range tx.Sessions {
		content := numbered(20, map[int]string{2: fmt.Sprintf("agent's two in file %d", i)})
		if _, err := c.Append(ctx, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: content + s.EndMarker + "\n"}); err != nil {
			t.Fatal(err)
		}
	}
	personWrites(t, a, numbered(20, map[int]string{18: "person's eighteen"}))
	res, err := c.TxCommit(ctx, protocol.TxCommitParams{TxID: tx.TxID})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Files[0].Merged || res.Files[1].Merged || len(res.Files[0].MergedHunks) != 1 {
		t.Fatalf("merged flags %v %v, hunks %+v", res.Files[0].Merged, res.Files[1].Merged, res.Files[0].MergedHunks)
	}
	if want := numbered(20, map[int]string{2: "agent's two in file 0", 18: "person's eighteen"}); readFile(t, a) != want {
		t.Fatalf("file a after the commit: %q", readFile(t, a))
	}

	personWrites(t, b, numbered(20, map[int]string{2: "agent's two in file 1", 10: "person's ten"}))
	u, err := c.Undo(ctx, tx.Sessions[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := numbered(20, map[int]string{18: "person's eighteen"}); readFile(t, a) != want {
		t.Fatalf("file a after the undo: %q", readFile(t, a))
	}
	if want := numbered(20, map[int]string{10: "person's ten"}); readFile(t, b) != want {
		t.Fatalf("file b after the undo: %q", readFile(t, b))
	}
	if len(u.Files) != 2 || u.Files[0].Merged || !u.Files[1].Merged {
		t.Fatalf("undo result %+v", u)
	}
}

// TestUndoOverlapIsRefused: a later edit of the very lines the session
// wrote cannot be kept by reverting them: refused, nothing changed.
func TestUndoOverlapIsRefused(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "undo-overlap.txt")
	os.WriteFile(path, []byte(numbered(10, nil)), 0o644)
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite},
		Content: numbered(10, map[int]string{4: "agent's four"})})
	if err != nil {
		t.Fatal(err)
	}
	later := numbered(10, map[int]string{4: "person's four"})
	personWrites(t, path, later)
	_, err = c.Undo(ctx, res.SessionID)
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	if pe := protoErr(t, err); len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].File != "person's four\n" || pe.Data.Conflicts[0].Session != "line 4\n" {
		t.Fatalf("conflicts %+v", pe.Data.Conflicts)
	}
	if readFile(t, path) != later {
		t.Fatalf("file after a refused undo: %q", readFile(t, path))
	}
}

// TestMultiFileEditUndoesAroundALaterEdit: a *** Begin Patch envelope
// changed two files; the person then edits one of them elsewhere. Undo
// reverts the envelope's change in both and keeps the person's.
func TestMultiFileEditUndoesAroundALaterEdit(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	a, b := filepath.Join(d.Root, "env-a.txt"), filepath.Join(d.Root, "env-b.txt")
	os.WriteFile(a, []byte(numbered(20, nil)), 0o644)
	os.WriteFile(b, []byte(numbered(20, nil)), 0o644)
	envelope := "*** Begin Patch\n*** Update File: env-a.txt\n@@\n line 2\n-line 3\n+line 3, by the agent\n line 4\n" +
		"*** Update File: env-b.txt\n@@\n line 2\n-line 3\n+line 3, by the agent\n line 4\n*** End Patch\n"
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: a, WorkspaceRoot: d.Root, Operation: protocol.OpEdit}, Content: envelope})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || readFile(t, b) != numbered(20, map[int]string{3: "line 3, by the agent"}) {
		t.Fatalf("envelope result %+v, b %q", res.Files, readFile(t, b))
	}
	personWrites(t, a, numbered(20, map[int]string{3: "line 3, by the agent", 17: "line 17, later"}))
	u, err := c.Undo(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := numbered(20, map[int]string{17: "line 17, later"}); readFile(t, a) != want {
		t.Fatalf("a after the undo: %q", readFile(t, a))
	}
	if readFile(t, b) != numbered(20, nil) || !u.Merged {
		t.Fatalf("b after the undo %q, merged %v", readFile(t, b), u.Merged)
	}
}

// TestDiffThatNoLongerAppliesIsMerged: the agent streams a unified diff
// written against the file at begin; meanwhile the person changes one of
// the diff's context lines in another process, so the diff no longer
// applies to the file. The finalize applies it to the file as it was at
// begin and merges that with the person's change; an overlapping change
// is refused with the region, the person's file untouched.
func TestDiffThatNoLongerAppliesIsMerged(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	path := filepath.Join(d.Root, "diff.txt")
	os.WriteFile(path, []byte(numbered(20, nil)), 0o644)
	diff := "--- a/diff.txt\n+++ b/diff.txt\n@@ -8,5 +8,5 @@\n line 8\n line 9\n-line 10\n+line 10, by the agent\n line 11\n line 12\n"

	b, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpEdit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: diff[:40]}); err != nil {
		t.Fatal(err)
	}
	person := numbered(20, map[int]string{8: "line 8, by the person"})
	personWrites(t, path, person)
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: diff[40:] + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	want := numbered(20, map[int]string{8: "line 8, by the person", 10: "line 10, by the agent"})
	if got := readFile(t, path); got != want {
		t.Fatalf("merged file:\n%s\nwant\n%s", got, want)
	}
	if !res.Merged || len(res.MergedHunks) != 1 || res.MergedHunks[0].New != "line 8, by the person\n" || res.FileSHA256 != hashOf(want) {
		t.Fatalf("result merged %v, hunks %+v", res.Merged, res.MergedHunks)
	}

	// The same diff over a change to the line it replaces: refused.
	os.WriteFile(path, []byte(numbered(20, nil)), 0o644)
	b, err = c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpEdit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: diff + b.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	person = numbered(20, map[int]string{10: "line 10, by the person"})
	personWrites(t, path, person)
	_, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	if pe := protoErr(t, err); len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].File != "line 10, by the person\n" || pe.Data.Conflicts[0].Session != "line 10, by the agent\n" {
		t.Fatalf("conflicts %+v", pe.Data.Conflicts)
	}
	if got := readFile(t, path); got != person {
		t.Fatalf("file after a refused merge: %q", got)
	}
}

// TestUndoKeepsWhatThePersonDidToCreatedDeletedAndMovedFiles: files a
// session created, deleted or moved, changed by the person in another
// process afterwards. The undo never loses the person's bytes: an edited
// created file is refused and kept, a created file deleted since is left
// alone, a moved file edited since moves back with the edits, and a
// transaction refuses all or nothing.
func TestUndoKeepsWhatThePersonDidToCreatedDeletedAndMovedFiles(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ctx := testCtx(t)
	write := func(p protocol.BeginParams, content string) protocol.FinalizeResult {
		t.Helper()
		res, err := c.Write(ctx, protocol.WriteParams{BeginParams: p, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	created := filepath.Join(d.Root, "created.txt")
	res := write(protocol.BeginParams{TargetFile: created, Operation: protocol.OpCreate}, numbered(5, nil))
	edited := numbered(5, map[int]string{2: "line 2, by the person"})
	personWrites(t, created, edited)
	_, err := c.Undo(ctx, res.SessionID)
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	if pe := protoErr(t, err); pe.Data.ActualSHA256 != hashOf(edited) || pe.Data.ExpectedSHA256 != res.FileSHA256 {
		t.Fatalf("refusal hashes %s %s", pe.Data.ExpectedSHA256, pe.Data.ActualSHA256)
	}
	if readFile(t, created) != edited {
		t.Fatalf("a refused undo changed the file: %q", readFile(t, created))
	}
	if err := exec.Command("rm", created).Run(); err != nil {
		t.Fatal(err)
	}
	u, err := c.Undo(ctx, res.SessionID)
	if err != nil || !u.Unchanged || u.Removed {
		t.Fatalf("undo of a created file the person deleted: %+v %v", u, err)
	}

	// A move, then the person edits the moved file.
	from, to := filepath.Join(d.Root, "from.txt"), filepath.Join(d.Root, "sub", "to.txt")
	os.WriteFile(from, []byte(numbered(12, nil)), 0o644)
	res = write(protocol.BeginParams{TargetFile: from, WorkspaceRoot: d.Root, Operation: protocol.OpEdit},
		"*** Begin Patch\n*** Update File: from.txt\n*** Move to: sub/to.txt\n@@\n line 2\n-line 3\n+line 3, by the agent\n line 4\n*** End Patch\n")
	personWrites(t, to, numbered(12, map[int]string{3: "line 3, by the agent", 11: "line 11, by the person"}))
	u, err = c.Undo(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := numbered(12, map[int]string{11: "line 11, by the person"}); readFile(t, from) != want {
		t.Fatalf("moved back: %q", readFile(t, from))
	}
	if _, err := os.Stat(filepath.Dir(to)); !os.IsNotExist(err) || !u.Merged {
		t.Fatalf("the move's directory is still there (%v) or the result is not merged: %+v", err, u)
	}

	// A deletion, then the person makes another file at that path: both
	// are kept, and the refusal carries both.
	gone := filepath.Join(d.Root, "gone.txt")
	os.WriteFile(gone, []byte("the old file\n"), 0o644)
	res = write(protocol.BeginParams{TargetFile: gone, WorkspaceRoot: d.Root, Operation: protocol.OpEdit},
		"*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n")
	personWrites(t, gone, "the person's new file\n")
	_, err = c.Undo(ctx, res.SessionID)
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	if pe := protoErr(t, err); len(pe.Data.Conflicts) != 1 || pe.Data.Conflicts[0].File != "the person's new file\n" || pe.Data.Conflicts[0].Session != "the old file\n" {
		t.Fatalf("conflicts %+v", pe.Data.Conflicts)
	}
	if readFile(t, gone) != "the person's new file\n" {
		t.Fatalf("a refused undo replaced the person's file: %q", readFile(t, gone))
	}

	// A transaction: one created file edited since refuses the whole undo.
	a, b := filepath.Join(d.Root, "tx-old.txt"), filepath.Join(d.Root, "tx-new.txt")
	os.WriteFile(a, []byte("old\n"), 0o644)
	tx, err := c.TxBegin(ctx, protocol.TxBeginParams{Files: []protocol.BeginParams{
		{TargetFile: a, Operation: protocol.OpOverwrite}, {TargetFile: b, Operation: protocol.OpCreate}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range tx.Sessions {
		if _, err := c.Append(ctx, protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: []string{"new\n", "made\n"}[i] + s.EndMarker + "\n"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.TxCommit(ctx, protocol.TxCommitParams{TxID: tx.TxID}); err != nil {
		t.Fatal(err)
	}
	personWrites(t, b, "made, and the person's line\n")
	_, err = c.Undo(ctx, tx.Sessions[0].SessionID)
	wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
	if readFile(t, a) != "new\n" || readFile(t, b) != "made, and the person's line\n" {
		t.Fatalf("a refused transaction undo changed a file: %q %q", readFile(t, a), readFile(t, b))
	}
}
