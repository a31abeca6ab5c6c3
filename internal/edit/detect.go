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
	// blocks (Aider), or "------- SEARCH" / "=======" / "+++++++ REPLACE"
	// blocks (Cline).
	FormatSearchReplace Format = "search_replace"
	// FormatUnifiedDiff: a unified diff ("---"/"+++" headers, "@@" hunks).
	FormatUnifiedDiff Format = "unified_diff"
	// FormatEnvelope: the "*** Begin Patch" / "*** End Patch" envelope.
	FormatEnvelope Format = "begin_patch"
)

// Dialect is the coding agent whose edit format an edit follows. Formats
// say how an edit is parsed; dialects also say how it is applied, since
// agents that share a syntax differ in what it means (an empty SEARCH
// section creates a file for Aider and replaces the whole file for Cline).
type Dialect string

// Dialects.
const (
	// DialectNone: a PatchSpec, or no known format.
	DialectNone Dialect = ""
	// DialectCodex: Codex's apply_patch envelope.
	DialectCodex Dialect = "codex_apply_patch"
	// DialectAider: Aider's SEARCH/REPLACE blocks ("diff" edit format), a
	// file path on the line before the fence or the SEARCH marker.
	DialectAider Dialect = "aider_editblock"
	// DialectAiderFenced: Aider's "diff-fenced" format, the path on the
	// first line inside the fence.
	DialectAiderFenced Dialect = "aider_diff_fenced"
	// DialectCline: Cline's replace_in_file blocks ("------- SEARCH",
	// "=======", "+++++++ REPLACE").
	DialectCline Dialect = "cline_replace_in_file"
	// DialectUnifiedDiff: a unified diff (git diff, diff -u, Aider's udiff).
	DialectUnifiedDiff Dialect = "unified_diff"
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

// Marker lines of search/replace blocks. Models miscount the repeated
// characters, so any run of five or more is accepted (Aider takes 5 to 9,
// Cline 3 or more; three "=" is too common in prose and markup to be a
// marker). Aider compares lines with their surrounding blanks stripped, and
// both tolerate a ">" after SEARCH.
var (
	searchRE  = regexp.MustCompile(`^\s*(?:<{5,}|-{5,}) ?SEARCH>?\s*$`)
	dividerRE = regexp.MustCompile(`^\s*={5,}\s*$`)
	replaceRE = regexp.MustCompile(`^\s*(?:>{5,}|\+{5,}) ?REPLACE>?\s*$`)
	// clineSearchRE is the SEARCH marker only Cline writes.
	clineSearchRE = regexp.MustCompile(`^\s*-{5,} ?SEARCH>?\s*$`)
	// Cline compares its marker lines as written: no padding, one space
	// before SEARCH or REPLACE. A marker it would not take is refused in
	// its dialect rather than guessed at, as Cline refuses it.
	clineStrictRE = regexp.MustCompile(`^(?:(?:-{5,}|<{5,}) SEARCH>?|={5,}|(?:\+{5,}|>{5,}) REPLACE>?)$`)
)

// Detect picks the format of an edit from its first structural line:
// "*** Begin Patch", a SEARCH marker, or a diff header ("diff --git", "--- "
// followed by "+++ ", or "@@"). Blank lines, code fences and prose before
// it are skipped, since models often wrap an edit in them. It returns
// FormatUnknown when there is no such line.
func Detect(content []byte) Format {
	lines := editLines(content)
	for i, l := range lines {
		switch {
		case strings.TrimSpace(l) == envelopeBegin:
			return FormatEnvelope
		case searchRE.MatchString(l), replaceRE.MatchString(l):
			// A REPLACE marker first means blocks that lost their SEARCH
			// marker: the parser says so, better than "unknown format".
			return FormatSearchReplace
		case strings.HasPrefix(l, "diff --git "), strings.HasPrefix(l, "@@"),
			strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			return FormatUnifiedDiff
		}
	}
	return FormatUnknown
}

// DetectDialect names the agent format an edit follows, from the same
// structural lines as Detect: for search/replace blocks, Cline's when the
// first SEARCH marker is Cline's, Aider's diff-fenced when the first path
// line is inside the fence, Aider's otherwise.
func DetectDialect(content []byte) Dialect {
	switch Detect(content) {
	case FormatEnvelope:
		return DialectCodex
	case FormatUnifiedDiff:
		return DialectUnifiedDiff
	case FormatSearchReplace:
		blocks, d, err := parseBlocks(content)
		if err != nil || len(blocks) == 0 {
			// The dialect of a malformed edit still shows in its first
			// marker.
			for _, l := range editLines(content) {
				if searchRE.MatchString(l) {
					if clineSearchRE.MatchString(l) {
						return DialectCline
					}
					return DialectAider
				}
			}
		}
		return d
	}
	return DialectNone
}

// unknownFormatHelp lists the formats an edit may take, each with a short
// example, for a model whose edit matched none of them.
const unknownFormatHelp = `expected one of these edit formats:
- Aider search/replace blocks (a path line, then):
    <<<<<<< SEARCH
    old line
    =======
    new line
    >>>>>>> REPLACE
- Cline replace_in_file blocks:
    ------- SEARCH
    old line
    =======
    new line
    +++++++ REPLACE
- Codex apply_patch envelope:
    *** Begin Patch
    *** Update File: path/to/file
    @@
    -old line
    +new line
    *** End Patch
- a unified diff:
    --- a/path/to/file
    +++ b/path/to/file
    @@ -1 +1 @@
    -old line
    +new line`

// Apply applies an edit to one file: search/replace blocks or a unified
// diff, as Detect tells. An envelope gets ErrMultiFile (it names its own
// files: use ApplyEnvelope); content in no known format gets
// ErrUnknownFormat, with an example of every format.
func Apply(old, content []byte) (Result, error) {
	return ApplyFile("", old, content)
}

// ApplyFile is Apply on the file called name: a placeholder left in a
// block's REPLACE part is read in the comment forms of its language.
func ApplyFile(name string, old, content []byte) (Result, error) {
	return ApplyFileAs(name, old, content, Charset{})
}

// ApplyAs is Apply on a file in the charset its project names: the file
// is decoded to UTF-8, edited, and encoded back, byte-exact outside the
// edit, or refused with ErrUnsupportedEncoding.
func ApplyAs(old, content []byte, cs Charset) (Result, error) {
	return ApplyFileAs("", old, content, cs)
}

// ApplyFileAs is ApplyFile on a file in the charset its project names,
// as ApplyAs.
func ApplyFileAs(name string, old, content []byte, cs Charset) (Result, error) {
	return onText(old, cs, Detect(content), func(text []byte) (Result, error) { return applyText(name, text, content) })
}

func applyText(name string, old, content []byte) (Result, error) {
	switch f := Detect(content); f {
	case FormatSearchReplace:
		return applySearchReplace(name, old, content)
	case FormatUnifiedDiff:
		res, err := ApplyUnifiedDiff(old, content)
		res.Dialect = DialectUnifiedDiff
		return res, err
	case FormatEnvelope:
		return Result{Format: f, Dialect: DialectCodex}, fmt.Errorf("%w: a *** Begin Patch envelope names its files itself; apply it with ApplyEnvelope", ErrMultiFile)
	}
	return Result{}, fmt.Errorf("%w: %s", ErrUnknownFormat, unknownFormatHelp)
}
