package edit_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// checkResult holds for every result: one status per part, and an edit
// without error has every part applied or already applied.
func checkResult(t *testing.T, res edit.Result, err error) {
	t.Helper()
	for i, b := range res.Blocks {
		if b.Index != i+1 {
			t.Fatalf("block %d has index %d", i+1, b.Index)
		}
		if err == nil && b.Status != edit.StatusApplied && b.Status != edit.StatusAlreadyApplied {
			t.Fatalf("no error, but block %d is %s", b.Index, b.Status)
		}
	}
	if err != nil && (res.Content != nil || res.Files != nil) {
		t.Fatalf("content or files on error %v", err)
	}
	if err == nil && res.Format != edit.FormatEnvelope && res.Content == nil {
		t.Fatal("nil content without error")
	}
}

// FuzzApply checks that no edit text, however broken, makes the engine
// panic.
func FuzzApply(f *testing.F) {
	f.Add([]byte(goFile), []byte(sr("func f() int {\n\tx := 1\n", "func f() int {\n\tx := 2\n")))
	f.Add([]byte("a\r\nb\r\n"), []byte(sr("", "x\n", "b\n", "")))
	f.Add([]byte(numbered(20)), []byte("--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n\\ No newline at end of file\n"))
	f.Add([]byte("a\nb"), []byte("@@ -0,0 +1 @@\n+x\n@@\n-b\n\n"))
	f.Add([]byte(py), []byte(envelope("*** Update File: f\n*** Move to: g\n@@ class B:\n@@\n-        return 1\n+        return 2\n*** End of File\n*** Add File: h\n+x\n*** Delete File: i\n")))
	f.Fuzz(func(t *testing.T, old, content []byte) {
		edit.Detect(content)
		res, err := edit.Apply(old, content)
		checkResult(t, res, err)
		res, err = edit.ApplySearchReplace(old, content)
		checkResult(t, res, err)
		res, err = edit.ApplyUnifiedDiff(old, content)
		checkResult(t, res, err)
		res, err = edit.ApplyEnvelope(content, func(p string) ([]byte, bool, error) {
			return old, len(p)%2 == 0, nil
		})
		checkResult(t, res, err)
	})
}

// FuzzApplyPatch does the same for patch specs.
func FuzzApplyPatch(f *testing.F) {
	f.Add([]byte(five), []byte("x\n"), uint8(0), 2, 3, "thr", false)
	f.Add([]byte("a\r\nb"), []byte("x"), uint8(6), 0, 0, `^\w`, true)
	f.Add([]byte(""), []byte(""), uint8(7), 0, 0, "", false)
	types := []string{"insert_before_line", "insert_after_line", "replace_lines", "prepend", "insert_before_marker",
		"insert_after_marker", "replace_block", "replace_pattern", "replace_all", "bogus"}
	f.Fuzz(func(t *testing.T, old, text []byte, typ uint8, a, b int, marker string, regex bool) {
		s := edit.PatchSpec{Type: types[int(typ)%len(types)], Regex: regex}
		switch s.Type {
		case "insert_before_line", "insert_after_line":
			s.Line = a
		case "replace_lines":
			s.StartLine, s.EndLine = a, b
		case "insert_before_marker", "insert_after_marker":
			s.Marker = marker
		case "replace_block":
			s.StartMarker, s.EndMarker = marker, string(text)
		case "replace_pattern", "replace_all":
			s.Pattern, s.Regex = marker, false
			if a%3 == 0 {
				s.Count = "all"
			} else if a%3 == 1 {
				s.Count = edit.Count(string(rune('0' + b%10)))
			}
			s.Expand = s.Type == "replace_pattern" && regex
		}
		res, err := edit.ApplyPatch(old, s, text)
		checkResult(t, res, err)
	})
}
