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
	found := findPlaceholders(TypeJavaScript, src)
	got := allocated() - before
	if len(found) != 1 || found[0].line != 1301 {
		t.Fatalf("found %+v, want the comment at line 1301", found)
	}
	if limit := uint64(len(src) / 4); got > limit {
		t.Errorf("allocated %d bytes looking through %d, want at most %d", got, len(src), limit)
	}
}
