package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

func lines(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			if s != "" {
				b.WriteString(s + "\n")
			}
			continue
		}
		b.WriteString("line " + strings.Repeat("i", i%4) + string(rune('0'+i%10)) + "\n")
	}
	return b.String()
}

// TestPatchMergesThreeWay: a patch by line number, whose lines moved
// because someone inserted lines above them meanwhile, lands on the lines
// it named at begin, not on whatever now has their numbers.
func TestPatchMergesThreeWay(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "p.txt")
	os.WriteFile(path, []byte(lines(12, nil)), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "p.txt", Operation: protocol.OpPatch,
		PatchSpec: []byte(`{"type":"replace_lines","start_line":9,"end_line":9}`)})
	h.append(b.SessionID, "patched nine\n"+b.EndMarker)
	os.WriteFile(path, []byte("added one\nadded two\n"+lines(12, nil)), 0o644)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if want := "added one\nadded two\n" + lines(12, map[int]string{9: "patched nine"}); h.read("p.txt") != want {
		t.Fatalf("file:\n%s\nwant\n%s", h.read("p.txt"), want)
	}
	if !res.Merged || len(res.MergedHunks) != 1 || res.MergedHunks[0].New != "added one\nadded two\n" || res.MergedHunks[0].EndLine != 0 {
		t.Fatalf("merged %v hunks %+v", res.Merged, res.MergedHunks)
	}
}

// TestMergeBoundsItsReports: a refusal lists at most MaxMergeReports
// regions, each text cut to MaxMergeTextBytes as valid UTF-8.
func TestMergeBoundsItsReports(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "big.txt")
	n := 3 * (protocol.MaxMergeReports + 10)
	os.WriteFile(path, []byte(lines(n, nil)), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpOverwrite})
	mine, theirs := map[int]string{}, map[int]string{}
	for i := 2; i <= n; i += 3 {
		mine[i] = "mine " + strings.Repeat("é", protocol.MaxMergeTextBytes)
		theirs[i] = "theirs"
	}
	h.append(b.SessionID, lines(n, mine)+b.EndMarker)
	os.WriteFile(path, []byte(lines(n, theirs)), 0o644)
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	pe, ok := err.(*protocol.Error)
	if !ok || pe.Data.Reason != protocol.ReasonTargetChanged {
		t.Fatalf("finalize: %v", err)
	}
	if len(pe.Data.Conflicts) != protocol.MaxMergeReports || !strings.Contains(pe.Message, "first 50") {
		t.Fatalf("%d conflicts listed: %s", len(pe.Data.Conflicts), pe.Message)
	}
	c := pe.Data.Conflicts[0]
	if !c.Truncated || len(c.Session) > protocol.MaxMergeTextBytes || !strings.HasPrefix(c.Session, "mine é") || strings.ContainsRune(c.Session, '\uFFFD') {
		t.Fatalf("first conflict's session text: %d bytes, truncated %v, %q...", len(c.Session), c.Truncated, c.Session[:20])
	}
	if h.read("big.txt") != lines(n, theirs) {
		t.Fatal("a refused merge changed the file")
	}
}

// TestContinuationMergesFromTheFirstBegin: a write cut off and continued
// in a new session merges against the file as the first session found it.
func TestContinuationMergesFromTheFirstBegin(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "c.txt")
	os.WriteFile(path, []byte(lines(12, nil)), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "c.txt", Operation: protocol.OpOverwrite})
	content := lines(12, map[int]string{2: "agent's two"})
	h.append(b.SessionID, content[:len(content)/2])
	h.clock.Advance(session.DefaultAutoFinalize)
	next, err := h.mgr.Continue(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(lines(12, map[int]string{11: "person's eleven"})), 0o644)
	h.append(next.SessionID, content[len(content)/2:]+next.EndMarker+"\n")
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: next.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if want := lines(12, map[int]string{2: "agent's two", 11: "person's eleven"}); h.read("c.txt") != want || !res.Merged {
		t.Fatalf("merged %v, file:\n%s", res.Merged, h.read("c.txt"))
	}
}

// TestDryRunShowsTheMerge: a dry run after someone changed the file shows
// the diff a finalize would write, merged, not one that reverts them.
func TestDryRunShowsTheMerge(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "d.txt")
	os.WriteFile(path, []byte(lines(12, nil)), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "d.txt", Operation: protocol.OpOverwrite})
	h.append(b.SessionID, lines(12, map[int]string{2: "agent's two"})+b.EndMarker+"\n")
	os.WriteFile(path, []byte(lines(12, map[int]string{11: "person's eleven"})), 0o644)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Merged || !strings.Contains(res.Diff, "+agent's two") || strings.Contains(res.Diff, "person's eleven") {
		t.Fatalf("dry run merged %v, diff:\n%s", res.Merged, res.Diff)
	}
	os.WriteFile(path, []byte(lines(12, map[int]string{2: "person's two"})), 0o644)
	res, err = h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Merged || len(res.Warnings) != 1 || res.Warnings[0].Code != protocol.ReasonTargetChanged {
		t.Fatalf("dry run over an overlapping change: merged %v, warnings %+v", res.Merged, res.Warnings)
	}
}

// TestEditThatNoLongerAppliesIsMergedFromBegin: an edit written against
// the file at begin that fails on the file now (its search text is there
// twice since, or a diff's context line was changed) is applied to the
// content at begin and merged three-way with the person's change.
func TestEditThatNoLongerAppliesIsMergedFromBegin(t *testing.T) {
	cases := []struct {
		name, edit, person, want string
		hunkStart                int
	}{{
		name:      "SearchNowTwice",
		edit:      "<<<<<<< SEARCH\n" + lines(12, nil)[len(lines(2, nil)):len(lines(4, nil))] + "=======\nagent's three\nagent's four\n>>>>>>> REPLACE\n",
		person:    lines(12, map[int]string{11: lines(12, nil)[len(lines(2, nil)):len(lines(4, nil))] + "line i1"}),
		want:      lines(12, map[int]string{3: "agent's three", 4: "agent's four", 11: lines(12, nil)[len(lines(2, nil)):len(lines(4, nil))] + "line i1"}),
		hunkStart: 11,
	}, {
		name: "DiffContextChanged",
		edit: "--- a/e.txt\n+++ b/e.txt\n@@ -3,5 +3,5 @@\n" + " line iii3\n line 4\n-line i5\n+agent's five\n line ii6\n line iii7\n",
		// The person changed line 3, a context line of the diff, and
		// left line 4 between their change and the agent's.
		person:    lines(12, map[int]string{3: "person's three"}),
		want:      lines(12, map[int]string{3: "person's three", 5: "agent's five"}),
		hunkStart: 3,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			path := filepath.Join(h.root, "e.txt")
			os.WriteFile(path, []byte(lines(12, nil)), 0o644)
			b := h.begin(protocol.BeginParams{TargetFile: "e.txt", Operation: protocol.OpEdit})
			h.append(b.SessionID, tc.edit+b.EndMarker+"\n")
			os.WriteFile(path, []byte(tc.person), 0o644)
			dry, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
			if err != nil || !dry.Merged || len(dry.Warnings) != 0 {
				t.Fatalf("dry run: %v, merged %v, warnings %+v", err, dry.Merged, dry.Warnings)
			}
			res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			if got := h.read("e.txt"); got != tc.want {
				t.Fatalf("file:\n%s\nwant\n%s", got, tc.want)
			}
			if !res.Merged || len(res.MergedHunks) != 1 || res.MergedHunks[0].StartLine != tc.hunkStart {
				t.Fatalf("merged %v hunks %+v", res.Merged, res.MergedHunks)
			}
		})
	}
}

// TestEditThatNoLongerAppliesOverlapIsRefused: the person changed the very
// lines the edit replaces: the edit fails on the file now and its merge
// from begin overlaps, so target_changed with the region, nothing
// written, and the session can still be forced or aborted.
func TestEditThatNoLongerAppliesOverlapIsRefused(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "o.txt")
	os.WriteFile(path, []byte(lines(12, nil)), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "o.txt", Operation: protocol.OpEdit})
	h.append(b.SessionID, "<<<<<<< SEARCH\nline i5\n=======\nagent's five\n>>>>>>> REPLACE\n"+b.EndMarker+"\n")
	person := lines(12, map[int]string{5: "person's five"})
	os.WriteFile(path, []byte(person), 0o644)
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	pe, ok := err.(*protocol.Error)
	if !ok || pe.Data.Reason != protocol.ReasonTargetChanged || len(pe.Data.Conflicts) != 1 {
		t.Fatalf("finalize: %v", err)
	}
	if c := pe.Data.Conflicts[0]; c.StartLine != 5 || c.Base != "line i5\n" || c.File != "person's five\n" || c.Session != "agent's five\n" {
		t.Fatalf("conflict %+v", c)
	}
	if h.read("o.txt") != person {
		t.Fatal("a refused merge changed the file")
	}
	info, _ := h.mgr.Get(b.SessionID)
	if !info.Stage.Open() {
		t.Fatalf("session after the refusal is %s, want it open", info.Stage)
	}
}

// TestEditFailingOnBothIsAnEditFailure: an edit that applies neither to the
// file now nor to the file at begin is refused as a failed edit, as
// without a change.
func TestEditFailingOnBothIsAnEditFailure(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "f.txt")
	os.WriteFile(path, []byte(lines(12, nil)), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpEdit})
	h.append(b.SessionID, "<<<<<<< SEARCH\nnowhere\n=======\nagent's\n>>>>>>> REPLACE\n"+b.EndMarker+"\n")
	os.WriteFile(path, []byte(lines(12, map[int]string{9: "person's nine"})), 0o644)
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if pe, ok := err.(*protocol.Error); !ok || pe.Code != protocol.CodeEditFailed {
		t.Fatalf("finalize: %v", err)
	}
}

// TestTxEditThatNoLongerAppliesIsMerged: a transaction's edit that fails
// on its file as changed since begin is merged from the content at begin,
// as a single finalize does; an overlapping one refuses the commit.
func TestTxEditThatNoLongerAppliesIsMerged(t *testing.T) {
	h := newHarness(t)
	h.put("a.txt", lines(12, nil))
	h.put("b.txt", "b\n")
	edit := "<<<<<<< SEARCH\nline i5\n=======\nagent's five\n>>>>>>> REPLACE\n"
	tx := h.txBegin([]protocol.BeginParams{
		{TargetFile: "a.txt", Operation: protocol.OpEdit},
		{TargetFile: "b.txt", Operation: protocol.OpOverwrite},
	}, []string{edit, "B\n"})
	// The person adds a second "line i5", so the search matches twice.
	h.put("a.txt", lines(12, map[int]string{11: "line i5\nline i1"}))
	res, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	if err != nil {
		t.Fatal(err)
	}
	if want := lines(12, map[int]string{5: "agent's five", 11: "line i5\nline i1"}); h.read("a.txt") != want || h.read("b.txt") != "B\n" {
		t.Fatalf("a.txt:\n%s\nb.txt %q", h.read("a.txt"), h.read("b.txt"))
	}
	if !res.Files[0].Merged || len(res.Files[0].MergedHunks) != 1 || res.Files[1].Merged {
		t.Fatalf("results %+v", res.Files)
	}
}

// TestEnvelopeThatNoLongerAppliesIsMerged: a *** Begin Patch envelope
// whose hunk's context the person changed meanwhile is applied to the
// target as it was at begin and merged with the person's change; the
// envelope's other files are written with it.
func TestEnvelopeThatNoLongerAppliesIsMerged(t *testing.T) {
	h := newHarness(t)
	h.put("t.txt", lines(12, nil))
	b := h.begin(protocol.BeginParams{TargetFile: "t.txt", Operation: protocol.OpEdit})
	h.append(b.SessionID, "*** Begin Patch\n*** Update File: t.txt\n@@\n line iii3\n line 4\n-line i5\n+agent's five\n line ii6\n"+
		"*** Add File: other.txt\n+other\n*** End Patch\n"+b.EndMarker+"\n")
	h.put("t.txt", lines(12, map[int]string{3: "person's three"}))
	dry, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, DryRun: true})
	if err != nil || !dry.Merged || len(dry.Warnings) != 0 {
		t.Fatalf("dry run: %v, merged %v, warnings %+v", err, dry.Merged, dry.Warnings)
	}
	if !strings.Contains(dry.Diff, "+agent's five") || strings.Contains(dry.Diff, "-person's three") || !strings.Contains(dry.Diff, "+other") {
		t.Fatalf("dry run's diff:\n%s", dry.Diff)
	}
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if want := lines(12, map[int]string{3: "person's three", 5: "agent's five"}); h.read("t.txt") != want || h.read("other.txt") != "other\n" {
		t.Fatalf("t.txt:\n%s\nother.txt %q", h.read("t.txt"), h.read("other.txt"))
	}
	if !res.Merged || len(res.MergedHunks) != 1 || res.MergedHunks[0].New != "person's three\n" || res.FileSHA256 != sha(h.read("t.txt")) {
		t.Fatalf("merged %v hunks %+v", res.Merged, res.MergedHunks)
	}
	// Undone: the agent's change goes from both files, the person's stays.
	if _, err := h.mgr.Undo(b.SessionID); err != nil {
		t.Fatal(err)
	}
	if h.read("t.txt") != lines(12, map[int]string{3: "person's three"}) || h.exists("other.txt") {
		t.Fatalf("after undo t.txt:\n%s\nother.txt there %v", h.read("t.txt"), h.exists("other.txt"))
	}
}
