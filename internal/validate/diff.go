package validate

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// Diff returns the unified diff from old to new for the file at path, as a
// dry run shows it: "--- a/path" and "+++ b/path" headers, hunks with three
// lines of context, and "\ No newline at end of file" where that applies.
// It is "" when old and new are equal. Line endings are compared as bytes,
// so a CRLF change shows up.
func Diff(path string, old, new []byte) string {
	if string(old) == string(new) {
		return ""
	}
	label := strings.TrimPrefix(path, "/")
	edits := udiff.Lines(string(old), string(new))
	d, err := udiff.ToUnified("a/"+label, "b/"+label, string(old), edits, diffContext)
	if err != nil {
		// The edits come from the same library and always apply; fall back
		// to the library's own path all the same.
		return udiff.Unified("a/"+label, "b/"+label, string(old), string(new))
	}
	return d
}
