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
