package edit

import (
	"fmt"
	"regexp"
	"strings"
)

// Format is an edit's format.
type Format string

// Formats.
const (
	// FormatUnknown: none of the formats below.
	FormatUnknown Format = ""
	// FormatPatch: a PatchSpec with the content as its text (ApplyPatch).
	FormatPatch Format = "patch"
	// FormatSearchReplace: "<<<<<<< SEARCH" / "=======" / ">>>>>>> REPLACE"
	// blocks.
	FormatSearchReplace Format = "search_replace"
	// FormatUnifiedDiff: a unified diff ("---"/"+++" headers, "@@" hunks).
	FormatUnifiedDiff Format = "unified_diff"
	// FormatEnvelope: the "*** Begin Patch" / "*** End Patch" envelope.
	FormatEnvelope Format = "begin_patch"
)

// partNoun names a part of an edit in messages.
func (f Format) partNoun() string {
	switch f {
	case FormatPatch:
		return "spec"
	case FormatSearchReplace:
		return "block"
	case FormatUnifiedDiff:
		return "hunk"
	}
	return "part"
}

var (
	searchRE  = regexp.MustCompile(`^<{5,9} ?SEARCH\s*$`)
	dividerRE = regexp.MustCompile(`^={5,9}\s*$`)
	replaceRE = regexp.MustCompile(`^>{5,9} ?REPLACE\s*$`)
)

// Detect picks the format of an edit from its first structural line:
// "*** Begin Patch", a "<<<<<<< SEARCH" marker, or a diff header ("diff
// --git", "--- " followed by "+++ ", or "@@"). Blank lines, code fences and
// prose before it are skipped, since models often wrap an edit in them. It
// returns FormatUnknown when there is no such line.
func Detect(content []byte) Format {
	lines := editLines(content)
	for i, l := range lines {
		switch {
		case strings.TrimSpace(l) == envelopeBegin:
			return FormatEnvelope
		case searchRE.MatchString(l):
			return FormatSearchReplace
		case strings.HasPrefix(l, "diff --git "), strings.HasPrefix(l, "@@"),
			strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			return FormatUnifiedDiff
		}
	}
	return FormatUnknown
}

// Apply applies an edit to one file: search/replace blocks or a unified
// diff, as Detect tells. An envelope gets ErrMultiFile (it names its own
// files: use ApplyEnvelope); content in no known format gets
// ErrUnknownFormat.
func Apply(old, content []byte) (Result, error) {
	switch f := Detect(content); f {
	case FormatSearchReplace:
		return ApplySearchReplace(old, content)
	case FormatUnifiedDiff:
		return ApplyUnifiedDiff(old, content)
	case FormatEnvelope:
		return Result{Format: f}, fmt.Errorf("%w: a *** Begin Patch envelope names its files itself; apply it with ApplyEnvelope", ErrMultiFile)
	}
	return Result{}, fmt.Errorf("%w: expected search/replace blocks (<<<<<<< SEARCH, =======, >>>>>>> REPLACE), a unified diff (---, +++, @@ hunks) or a *** Begin Patch envelope", ErrUnknownFormat)
}
