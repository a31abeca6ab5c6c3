package edit

import (
	"errors"
	"fmt"
	"strings"
)

// Status says what happened to one block, hunk or chunk of an edit. Values
// are stable: clients and models may match on them.
type Status string

// Statuses of a part of an edit.
const (
	// StatusApplied: the part matches the file and its change is made (or,
	// when another part failed, would be made once the edit is resent).
	StatusApplied Status = "applied"
	// StatusAlreadyApplied: the part's change is already in the file (its
	// replacement text is there and its search text is not); it is skipped.
	StatusAlreadyApplied Status = "already_applied"
	// StatusNoMatch: the text to find is not in the file.
	StatusNoMatch Status = "no_match"
	// StatusAmbiguous: the text to find is in the file more than once.
	StatusAmbiguous Status = "ambiguous"
	// StatusCountMismatch: a pattern matches a number of times other than
	// the count the spec asks for.
	StatusCountMismatch Status = "count_mismatch"
	// StatusContextMismatch: a diff hunk's context and removed lines do not
	// match the file near the lines its header names.
	StatusContextMismatch Status = "context_mismatch"
	// StatusOverlap: a diff hunk covers lines an earlier hunk already covers.
	StatusOverlap Status = "overlap"
	// StatusOutOfRange: a line number is past the end of the file.
	StatusOutOfRange Status = "out_of_range"
	// StatusConflict: a file operation does not fit the file system: adding
	// a file that exists, updating one that does not, moving onto one that
	// exists.
	StatusConflict Status = "conflict"
)

// ok reports whether the status lets the edit go through.
func (s Status) ok() bool { return s == StatusApplied || s == StatusAlreadyApplied }

// Match says how tolerant the match of a part was.
type Match string

// Match levels, from strict to lenient. Each is tried only when the stricter
// ones found nothing.
const (
	// MatchExact: the lines are equal byte for byte (line endings aside).
	MatchExact Match = "exact"
	// MatchTrailingSpace: equal once trailing spaces and tabs are removed.
	MatchTrailingSpace Match = "trailing_whitespace"
	// MatchIndentation: equal once leading and trailing whitespace is
	// removed. Search/replace blocks re-indent their replacement to the
	// file's indentation at this level.
	MatchIndentation Match = "indentation"
	// MatchPunctuation: equal once surrounding whitespace is removed and
	// typographic dashes, quotes and spaces are read as their ASCII forms
	// (Codex's last resort, for envelopes only).
	MatchPunctuation Match = "unicode_punctuation"
	// MatchAnchor: a Cline block of three lines or more whose first and
	// last lines match (ignoring surrounding whitespace) at exactly one
	// place; the lines between are replaced whatever they say.
	MatchAnchor Match = "anchor"
)

// Result reports an edit: the new content and what happened to each part.
// On error the Blocks are still filled in, so a caller can show the model
// which parts to fix; Content is then nil.
type Result struct {
	// Format is the edit's format; FormatPatch for [ApplyPatch].
	Format Format `json:"format"`
	// Dialect is the coding agent whose format the edit follows, and whose
	// rules applied it.
	Dialect Dialect `json:"dialect,omitempty"`
	// Blocks has one entry per block, hunk or chunk, in the edit's order.
	Blocks []BlockResult `json:"blocks"`
	// Changed is true when Content differs from the old file.
	Changed bool `json:"changed"`
	// AlreadyApplied is true when every part of the edit was already in
	// the file (or files): the edit changes nothing, and nothing is to be
	// written. A resent edit gets it; a summary must not call it a write.
	AlreadyApplied bool `json:"already_applied,omitempty"`
	// Content is the new file. It is not encoded: the daemon writes it.
	// Nil for an envelope, whose results are in Files.
	Content []byte `json:"-"`
	// ElisionsMerged counts the lines left out inside blocks (a REPLACE
	// placeholder, Aider's "..." lines) that were filled from the file.
	ElisionsMerged int `json:"elisions_merged,omitempty"`
	// Files are the file operations of an envelope, in its order, to be
	// applied as one transaction. Operations that change nothing (already
	// applied) are left out.
	Files []FileOp `json:"files,omitempty"`
}

// BlockResult is the outcome of one part of an edit.
type BlockResult struct {
	// Index numbers the parts of an edit from 1, in the edit's order.
	Index int `json:"index"`
	// Path is the file of an envelope part; empty for single-file edits.
	Path string `json:"path,omitempty"`
	// EditLine is the line of the edit text where the part starts (its
	// SEARCH marker, "@@" header or file header), for a model to find it.
	EditLine int `json:"edit_line,omitempty"`
	// Status is what happened.
	Status Status `json:"status"`
	// StartLine and EndLine (1-based, inclusive) are the lines of the file
	// the part matched. For search/replace blocks and envelope chunks they
	// count in the file as the earlier parts left it; for diff hunks and
	// patch specs, in the original file. EndLine < StartLine for a pure
	// insertion before StartLine.
	StartLine int `json:"start_line,omitempty"`
	EndLine   int `json:"end_line,omitempty"`
	// Match is how tolerant the match was.
	Match Match `json:"match,omitempty"`
	// Offset is how many lines a diff hunk matched away from its header.
	Offset int `json:"offset,omitempty"`
	// Matches are the first lines of every match when a part is ambiguous
	// or a count does not fit.
	Matches []int `json:"matches,omitempty"`
	// ElisionsMerged counts the lines this block left out (a placeholder
	// in its REPLACE part, Aider's "..." lines) that were filled from the
	// file, each placed by the unchanged lines around it.
	ElisionsMerged int `json:"elisions_merged,omitempty"`
	// Closest is the part of the file most like the text that did not
	// match, for a model to copy from.
	Closest *Excerpt `json:"closest,omitempty"`
	// Message explains a failure and what to do about it.
	Message string `json:"message,omitempty"`
}

// Excerpt is a run of lines of the file.
type Excerpt struct {
	// StartLine is the 1-based number of Lines[0].
	StartLine int `json:"start_line"`
	// Lines are the lines, without their endings.
	Lines []string `json:"lines"`
	// Similarity, from 0 to 1, is how close the lines are to the text that
	// was looked for.
	Similarity float64 `json:"similarity"`
}

// String renders the excerpt with line numbers, as error messages show it.
func (e *Excerpt) String() string {
	var b strings.Builder
	for i, l := range e.Lines {
		fmt.Fprintf(&b, "%6d | %s\n", e.StartLine+i, l)
	}
	return b.String()
}

// Sentinel errors; [Error], [SyntaxError] and [ValidationError] match them
// with errors.Is.
var (
	// ErrNoMatch: some part has StatusNoMatch.
	ErrNoMatch = errors.New("no match")
	// ErrAmbiguous: some part has StatusAmbiguous.
	ErrAmbiguous = errors.New("ambiguous match")
	// ErrCountMismatch: some part has StatusCountMismatch.
	ErrCountMismatch = errors.New("match count differs")
	// ErrContextMismatch: some part has StatusContextMismatch.
	ErrContextMismatch = errors.New("context mismatch")
	// ErrOverlap: some part has StatusOverlap.
	ErrOverlap = errors.New("overlapping hunks")
	// ErrOutOfRange: some part has StatusOutOfRange.
	ErrOutOfRange = errors.New("line out of range")
	// ErrConflict: some part has StatusConflict.
	ErrConflict = errors.New("file conflict")
	// ErrSyntax: the edit text is malformed (or truncated).
	ErrSyntax = errors.New("malformed edit")
	// ErrInvalidSpec: a PatchSpec is incomplete or inconsistent.
	ErrInvalidSpec = errors.New("invalid patch spec")
	// ErrUnknownFormat: Detect found no edit format in the content.
	ErrUnknownFormat = errors.New("unknown edit format")
	// ErrMultiFile: the edit names several files (or a file operation) and
	// must go through ApplyEnvelope.
	ErrMultiFile = errors.New("edit touches several files")
)

var statusErrs = map[Status]error{
	StatusNoMatch:         ErrNoMatch,
	StatusAmbiguous:       ErrAmbiguous,
	StatusCountMismatch:   ErrCountMismatch,
	StatusContextMismatch: ErrContextMismatch,
	StatusOverlap:         ErrOverlap,
	StatusOutOfRange:      ErrOutOfRange,
	StatusConflict:        ErrConflict,
}

// Error is returned when parts of an edit fail. Nothing is applied: the
// whole edit is to be fixed and resent (parts already applied are then
// skipped as already_applied, so resending them all is safe).
type Error struct {
	// Format is the edit's format.
	Format Format
	// Failed are the parts that failed, in order.
	Failed []BlockResult
	// Total is the number of parts in the edit.
	Total int
}

// Error lists every failed part with its message.
func (e *Error) Error() string {
	var b strings.Builder
	noun := e.Format.partNoun()
	if e.Format == FormatPatch && len(e.Failed) == 1 {
		f := e.Failed[0]
		fmt.Fprintf(&b, "patch: %s (nothing was changed): %s", f.Status, f.Message)
		if f.Closest != nil {
			fmt.Fprintf(&b, "\nclosest lines of the file (%.0f%% similar):\n%s", 100*f.Closest.Similarity, strings.TrimSuffix(f.Closest.String(), "\n"))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %d of %d %ss failed; nothing was changed", e.Format, len(e.Failed), e.Total, noun)
	for _, f := range e.Failed {
		b.WriteString("\n")
		fmt.Fprintf(&b, "%s %d", noun, f.Index)
		switch {
		case f.Path != "" && f.EditLine > 0:
			fmt.Fprintf(&b, " (%s, edit line %d)", f.Path, f.EditLine)
		case f.Path != "":
			fmt.Fprintf(&b, " (%s)", f.Path)
		case f.EditLine > 0:
			fmt.Fprintf(&b, " (edit line %d)", f.EditLine)
		}
		fmt.Fprintf(&b, ": %s: %s", f.Status, f.Message)
		if f.Closest != nil {
			fmt.Fprintf(&b, "\nclosest lines of the file (%.0f%% similar):\n%s", 100*f.Closest.Similarity, strings.TrimSuffix(f.Closest.String(), "\n"))
		}
	}
	if e.Format != FormatPatch {
		b.WriteString("\nfix the failed " + noun + "s and resend the whole edit; " + noun + "s already applied are skipped")
	}
	return b.String()
}

// Is matches the sentinel of any failed part's status, so that
// errors.Is(err, ErrAmbiguous) holds when some part is ambiguous.
func (e *Error) Is(target error) bool {
	for _, f := range e.Failed {
		if statusErrs[f.Status] == target {
			return true
		}
	}
	return false
}

// SyntaxError reports malformed edit text.
type SyntaxError struct {
	// Format is the format being parsed.
	Format Format
	// Line is the 1-based line of the edit text at fault; 0 for the end.
	Line int
	// Msg says what is wrong and what was expected.
	Msg string
}

// Error says where the edit text is wrong.
func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: at end of edit: %s", e.Format, e.Msg)
	}
	return fmt.Sprintf("%s: line %d of the edit: %s", e.Format, e.Line, e.Msg)
}

// Is matches ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// ValidationError reports a bad PatchSpec field.
type ValidationError struct {
	// Field is the JSON name of the field.
	Field string
	// Value is the value given, as text.
	Value string
	// Err says what is wrong; it wraps ErrInvalidSpec.
	Err error
}

// Error names the field and the problem.
func (e *ValidationError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("patch_spec.%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("patch_spec.%s = %q: %v", e.Field, e.Value, e.Err)
}

// Unwrap returns the cause.
func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(field, value, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Value: value, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidSpec}, args...)...)}
}

// finish builds the Result and error of an edit from its parts.
func finish(format Format, old []byte, blocks []BlockResult, content func() []byte) (Result, error) {
	res := Result{Format: format, Blocks: blocks}
	var failed []BlockResult
	for _, b := range blocks {
		if !b.Status.ok() {
			failed = append(failed, b)
		}
	}
	if len(failed) > 0 {
		return res, &Error{Format: format, Failed: failed, Total: len(blocks)}
	}
	res.Content = content()
	if res.Content == nil && format != FormatEnvelope {
		res.Content = []byte{} // an empty file, not a failure
	}
	res.Changed = string(res.Content) != string(old)
	res.AlreadyApplied = allAlreadyApplied(blocks)
	return res, nil
}

// allAlreadyApplied reports an edit none of whose parts had anything left
// to do.
func allAlreadyApplied(blocks []BlockResult) bool {
	for _, b := range blocks {
		if b.Status != StatusAlreadyApplied {
			return false
		}
	}
	return len(blocks) > 0
}
