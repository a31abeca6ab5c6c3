package validate

import (
	"strings"

	"github.com/orion-agent/orion/internal/linediff"
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
	// A minimal line diff, as diff -u shows: a person reviews what changed,
	// not a region deleted and re-added around it.
	return linediff.Unified("a/"+label, "b/"+label, old, new, diffContext)
}
