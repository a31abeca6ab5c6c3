package validate

import (
	"runtime"
	"strings"
	"testing"
)

// Looking for placeholders in a large file copies only the lines that may
// be ones, not the file: 64 KiB of code with a few comments costs a few
// KiB, where it cost a copy of the whole text.
func TestFindPlaceholdersCopiesOnlyCandidates(t *testing.T) {
	src := []byte(strings.Repeat("let x = compute(a, b, c) + other(d, e, f) + more(g);\n", 1300) +
		"// ... rest of the code unchanged\n" + strings.Repeat("y();\n", 10))
	allocated := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc
	}
	before := allocated()
	found := findPlaceholders(TypeJavaScript, newLines(src))
	got := allocated() - before
	if len(found) != 1 || found[0].line != 1301 {
		t.Fatalf("found %+v, want the comment at line 1301", found)
	}
	if limit := uint64(len(src) / 4); got > limit {
		t.Errorf("allocated %d bytes looking through %d, want at most %d", got, len(src), limit)
	}
}

// A whole-file check indexes the content's lines once, for the syntax
// checks and the placeholder scan alike: a text of many short lines costs
// about one index (8 bytes a line), where it cost two.
func TestCheckIndexesLinesOnce(t *testing.T) {
	const n = 1 << 14
	src := []byte(strings.Repeat("x = 1\n", n))
	allocated := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc
	}
	before := allocated()
	r := Check("notes.txt", src, nil, false, CheckOptions{EndMarkerSeen: true})
	got := allocated() - before
	if len(r.Findings) != 0 {
		t.Fatalf("findings %+v, want none", r.Findings)
	}
	if index, limit := uint64(8*(n+1)), uint64(12*(n+1)); got > limit {
		t.Errorf("allocated %d bytes checking %d lines, want about one line index (%d), at most %d", got, n, index, limit)
	}
}

// The last line of a file is looked at where it is: a file of one long
// line (minified, or without newlines) is not copied by every check.
func TestCheckDoesNotCopyTheLastLine(t *testing.T) {
	src := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 64<<10/26) + "\n")
	allocated := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc
	}
	before := allocated()
	Check("notes.txt", src, nil, false, CheckOptions{EndMarkerSeen: true})
	if got, limit := allocated()-before, uint64(len(src)/8); got > limit {
		t.Errorf("allocated %d bytes checking a file of one %d-byte line, want at most %d", got, len(src), limit)
	}
}
