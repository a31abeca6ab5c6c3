package validate

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/textfmt"
)

// UTF8Policy says what [Repair] does with bytes that are not valid UTF-8.
type UTF8Policy string

// UTF-8 policies.
const (
	// UTF8Replace replaces each invalid byte with U+FFFD and reports it. It
	// is the default.
	UTF8Replace UTF8Policy = "replace"
	// UTF8Refuse makes Repair fail with a *UTF8Error.
	UTF8Refuse UTF8Policy = "refuse"
)

// RepairOptions configure [Repair]. The zero value removes no marker and no
// DONE line and replaces invalid UTF-8.
type RepairOptions struct {
	// EndMarker is the session's end marker. A line holding only the marker,
	// and everything after it, is removed; so is the marker glued to the end
	// of the last line.
	EndMarker string `json:"end_marker,omitempty"`
	// AllowLegacyDone removes a last line reading exactly "DONE", the end
	// signal of the legacy protocol. Only sessions that asked for it set it,
	// since DONE can be real content.
	AllowLegacyDone bool `json:"allow_legacy_done,omitempty"`
	// InvalidUTF8 is the policy for invalid UTF-8; "" means UTF8Replace.
	InvalidUTF8 UTF8Policy `json:"invalid_utf8,omitempty"`
}

// FixKind identifies a kind of repair. Kinds are stable.
type FixKind string

// Repair kinds.
const (
	// FixEndMarkerRemoved: the end marker line, or a marker glued to the
	// last line, was removed.
	FixEndMarkerRemoved FixKind = "end_marker_removed"
	// FixTextAfterMarker: text after the marker line was dropped.
	FixTextAfterMarker FixKind = "text_after_marker_removed"
	// FixDoneLineRemoved: the legacy DONE line was removed.
	FixDoneLineRemoved FixKind = "done_line_removed"
	// FixCodeFenceRemoved: a Markdown fence wrapping the whole content of a
	// non-Markdown file was removed.
	FixCodeFenceRemoved FixKind = "code_fence_removed"
	// FixLineEndings: line endings were changed to the original's (LF for a
	// new file).
	FixLineEndings FixKind = "line_endings_matched"
	// FixFinalNewlineAdded and FixFinalNewlineRemoved: the final newline was
	// made to match the original (a new file gets one).
	FixFinalNewlineAdded   FixKind = "final_newline_added"
	FixFinalNewlineRemoved FixKind = "final_newline_removed"
	// FixInvalidUTF8Replaced: invalid bytes became U+FFFD.
	FixInvalidUTF8Replaced FixKind = "invalid_utf8_replaced"
	// FixBOMAdded and FixBOMRemoved: the UTF-8 byte order mark was made to
	// match the original.
	FixBOMAdded   FixKind = "bom_added"
	FixBOMRemoved FixKind = "bom_removed"
)

// Fix reports one change [Repair] made.
type Fix struct {
	Kind FixKind `json:"kind"`
	// Message says what was changed and why, in words.
	Message string `json:"message"`
	// Line is where the change applies in the content as received, 1-based;
	// 0 when it applies to the whole content.
	Line int `json:"line,omitempty"`
	// Count is how many places were changed, where that is more than one.
	Count int `json:"count,omitempty"`
}

// ErrInvalidUTF8 is the error a *UTF8Error wraps.
var ErrInvalidUTF8 = errors.New("content is not valid UTF-8")

// UTF8Error is returned by [Repair] under [UTF8Refuse].
type UTF8Error struct {
	// Line and Column (in characters, 1-based) locate the first invalid
	// byte; Count is the number of invalid bytes.
	Line, Column, Count int
}

// Error says where the first invalid byte is and what to do.
func (e *UTF8Error) Error() string {
	return fmt.Sprintf("content is not valid UTF-8: %s, the first at line %d, column %d; send the text as UTF-8",
		textfmt.Count(e.Count, "invalid byte", "invalid bytes"), e.Line, e.Column)
}

// Unwrap lets errors.Is(err, ErrInvalidUTF8) match.
func (e *UTF8Error) Unwrap() error { return ErrInvalidUTF8 }

// Repair returns content as it should be written to path, and the list of
// changes made. original is the file being replaced (hasOriginal is false
// for a new file, whose conventions are LF line endings, a final newline and
// no BOM added).
//
// Repair only reads content and original. Where it changes nothing it
// returns content itself, else a slice of its own: a caller may pass bytes
// it must keep as they are (a view of a request's string, content still to
// be journaled as sent), as long as it never writes to the result either.
// Empty content comes back as a new empty slice, never nil.
//
// Repair changes only what it reports: content that already follows the
// original's conventions comes out byte for byte, and lines the new content
// shares with the original keep the original's line endings even when the
// original mixes them.
func Repair(path string, content, original []byte, hasOriginal bool, opts RepairOptions) ([]byte, []Fix, error) {
	if !hasOriginal || len(original) == 0 {
		// An empty file has no conventions to follow.
		original, hasOriginal = nil, false
	}
	var fixes []Fix

	// Invalid UTF-8 first, so that the positions it reports are those of
	// the content as received. A file that is not UTF-8 to begin with is
	// left alone: its bytes are in some other encoding, not broken.
	if !utf8.Valid(content) && (!hasOriginal || utf8.Valid(original)) {
		if opts.InvalidUTF8 == UTF8Refuse {
			return nil, nil, utf8Problem(content)
		}
		e := utf8Problem(content)
		content = replaceInvalidUTF8(content)
		fixes = append(fixes, Fix{
			Kind:    FixInvalidUTF8Replaced,
			Message: fmt.Sprintf("replaced %s that were not valid UTF-8 with U+FFFD, the first at line %d, column %d", textfmt.Count(e.Count, "byte", "bytes"), e.Line, e.Column),
			Line:    e.Line,
			Count:   e.Count,
		})
	}

	hadBOM := bytes.HasPrefix(content, bom)
	body := bytes.TrimPrefix(content, bom)
	origBody := bytes.TrimPrefix(original, bom)

	if opts.EndMarker != "" {
		var f []Fix
		body, f = removeMarker(body, opts.EndMarker)
		fixes = append(fixes, f...)
	}
	if opts.AllowLegacyDone {
		var f *Fix
		body, f = removeDone(body, origBody, hasOriginal)
		if f != nil {
			fixes = append(fixes, *f)
		}
	}
	if Detect(path, nil) != TypeMarkdown {
		var f *Fix
		body, f = removeWholeFence(body, origBody, hasOriginal)
		if f != nil {
			fixes = append(fixes, *f)
		}
	}

	eol := []byte("\n")
	var eolOf map[string][][]byte
	if hasOriginal {
		eol, eolOf = originalEOLs(origBody)
	}
	var n int
	body, n = matchLineEndings(body, eol, eolOf, hasOriginal && bytes.HasSuffix(origBody, []byte("\r")))
	if n > 0 {
		fixes = append(fixes, Fix{
			Kind:    FixLineEndings,
			Message: fmt.Sprintf("changed %s to %s", textfmt.Count(n, "line ending", "line endings"), eolDescription(hasOriginal, eol, eolOf)),
			Count:   n,
		})
	}

	wantFinal := !hasOriginal || bytes.HasSuffix(origBody, []byte("\n"))
	switch {
	case len(body) == 0:
		// An empty file gets no newline.
	case wantFinal && !bytes.HasSuffix(body, []byte("\n")):
		body = append(body, eol...)
		why := "a new file ends with a newline"
		if hasOriginal {
			why = "the existing file ends with one"
		}
		fixes = append(fixes, Fix{Kind: FixFinalNewlineAdded, Message: "added a final newline: " + why})
	case !wantFinal && bytes.HasSuffix(body, []byte("\n")):
		body = bytes.TrimSuffix(body, []byte("\n"))
		body = bytes.TrimSuffix(body, []byte("\r"))
		fixes = append(fixes, Fix{Kind: FixFinalNewlineRemoved, Message: "removed the final newline: the existing file has none"})
	}

	wantBOM := hadBOM
	if hasOriginal {
		wantBOM = bytes.HasPrefix(original, bom)
	}
	switch {
	case wantBOM && !hadBOM:
		fixes = append(fixes, Fix{Kind: FixBOMAdded, Message: "added the UTF-8 byte order mark the existing file starts with"})
	case !wantBOM && hadBOM:
		fixes = append(fixes, Fix{Kind: FixBOMRemoved, Message: "removed a UTF-8 byte order mark: the existing file has none"})
	}
	if wantBOM == hadBOM && len(body) > 0 && len(body) == len(bytes.TrimPrefix(content, bom)) &&
		&body[0] == &content[len(content)-len(body)] {
		// Nothing changed: body is still content's own bytes, all of
		// them after the byte order mark it keeps. Content of 64 KiB
		// would otherwise be copied for nothing.
		return content, fixes, nil
	}
	out := make([]byte, 0, len(body)+len(bom))
	if wantBOM {
		out = append(out, bom...)
	}
	out = append(out, body...)
	return out, fixes, nil
}

// utf8Problem locates the invalid bytes of content.
func utf8Problem(content []byte) *UTF8Error {
	e := &UTF8Error{}
	first := -1
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRune(content[i:])
		if r == utf8.RuneError && size == 1 {
			if first < 0 {
				first = i
			}
			e.Count++
		}
		i += size
	}
	e.Line, e.Column = newLines(content).position(first)
	return e
}

// replaceInvalidUTF8 replaces each invalid byte with U+FFFD, so the number
// of replacement characters equals the number of bad bytes reported.
func replaceInvalidUTF8(content []byte) []byte {
	out := make([]byte, 0, len(content)+16)
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRune(content[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, content[i:i+size]...)
		}
		i += size
	}
	return out
}

// splitLines splits b after each '\n'; the last element lacks one when b
// does not end with a newline.
func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.SplitAfter(b, []byte("\n"))
}

// trimEOL removes a line's "\n" or "\r\n" terminator.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// isBlank reports whether a line holds only whitespace.
func isBlank(line []byte) bool {
	return len(bytes.TrimSpace(line)) == 0
}

// removeMarker cuts body at a line that holds only the marker; text after
// it was never meant for the file. It also strips a marker glued to the end
// of the last line ("}__END_WRITE_x__"), which the session's scanner does
// not count as a marker line. The marker is unique to the session, so this
// never removes real content.
func removeMarker(body []byte, marker string) ([]byte, []Fix) {
	if !bytes.Contains(body, []byte(marker)) {
		return body, nil // neither a marker line nor a glued one: no lines split
	}
	var fixes []Fix
	ls := splitLines(body)
	off := 0
	for i, l := range ls {
		if string(bytes.TrimSpace(l)) == marker {
			rest := body[off+len(l):]
			fixes = append(fixes, Fix{Kind: FixEndMarkerRemoved, Message: "removed the end marker line", Line: i + 1})
			if !isBlank(rest) {
				fixes = append(fixes, Fix{
					Kind:    FixTextAfterMarker,
					Message: fmt.Sprintf("removed %s after the end marker: text after the marker is not part of the file", textfmt.Count(len(rest), "byte", "bytes")),
					Line:    i + 2,
				})
			}
			return body[:off:off], fixes
		}
		off += len(l)
	}
	trimmed := bytes.TrimRight(body, " \t\r\n")
	if bytes.HasSuffix(trimmed, []byte(marker)) {
		cut := trimmed[:len(trimmed)-len(marker)]
		cut = bytes.TrimRight(cut, " \t")
		line := bytes.Count(cut, []byte("\n")) + 1
		out := append(cut[:len(cut):len(cut)], body[len(trimmed):]...)
		fixes = append(fixes, Fix{Kind: FixEndMarkerRemoved, Message: "removed the end marker from the end of the last line; it belongs on a line of its own", Line: line})
		return out, fixes
	}
	return body, nil
}

// lastNonBlankLine returns the index in ls of the last non-blank line, or -1.
func lastNonBlankLine(ls [][]byte) int {
	for i := len(ls) - 1; i >= 0; i-- {
		if !isBlank(ls[i]) {
			return i
		}
	}
	return -1
}

// removeDone removes a last line reading "DONE", unless the original file
// ends with that line too: then it is the file's own content.
func removeDone(body, orig []byte, hasOriginal bool) ([]byte, *Fix) {
	ls := splitLines(body)
	i := lastNonBlankLine(ls)
	if i < 0 || string(bytes.TrimSpace(ls[i])) != "DONE" {
		return body, nil
	}
	if hasOriginal {
		ol := splitLines(orig)
		if j := lastNonBlankLine(ol); j >= 0 && string(bytes.TrimSpace(ol[j])) == "DONE" {
			return body, nil
		}
	}
	off := 0
	for _, l := range ls[:i] {
		off += len(l)
	}
	return body[:off:off], &Fix{Kind: FixDoneLineRemoved, Message: "removed the legacy DONE line that ended the stream", Line: i + 1}
}

// fenceOpen parses a Markdown fence opener ("```go", "~~~"): its character
// and length, or 0 if line is not one.
func fenceOpen(line []byte) (byte, int) {
	l := trimEOL(line)
	indent := 0
	for indent < len(l) && l[indent] == ' ' {
		indent++
	}
	l = l[indent:]
	if len(l) < 3 || (l[0] != '`' && l[0] != '~') {
		return 0, 0
	}
	c := l[0]
	n := 0
	for n < len(l) && l[n] == c {
		n++
	}
	if n < 3 {
		return 0, 0
	}
	if c == '`' && bytes.IndexByte(l[n:], '`') >= 0 {
		// A backtick in the info string makes it inline code, not a fence.
		return 0, 0
	}
	return c, n
}

// isFenceClose reports whether line closes a fence of character c and
// length n: at least n of c and nothing else but blanks.
func isFenceClose(line []byte, c byte, n int) bool {
	l := bytes.TrimSpace(line)
	if len(l) < n {
		return false
	}
	for _, b := range l {
		if b != c {
			return false
		}
	}
	return true
}

// wholeFence finds a fence wrapping all of body: the index of the opener
// and closer lines in ls, or -1, -1.
func wholeFence(ls [][]byte) (int, int) {
	first := 0
	for first < len(ls) && isBlank(ls[first]) {
		first++
	}
	last := lastNonBlankLine(ls)
	if first >= len(ls) || last <= first {
		return -1, -1
	}
	c, n := fenceOpen(ls[first])
	if c == 0 || !isFenceClose(ls[last], c, n) {
		return -1, -1
	}
	return first, last
}

// removeWholeFence removes a Markdown code fence that wraps the whole
// content, which models add out of habit, unless the original is wrapped
// the same way.
func removeWholeFence(body, orig []byte, hasOriginal bool) ([]byte, *Fix) {
	if !opensWithFence(body) {
		return body, nil // both removals start at an opening fence
	}
	ls := splitLines(body)
	first, last := wholeFence(ls)
	if first < 0 {
		return removeOpenFence(body, ls, orig, hasOriginal)
	}
	if hasOriginal {
		if of, _ := wholeFence(splitLines(orig)); of >= 0 {
			return body, nil
		}
	}
	opener := string(bytes.TrimSpace(ls[first]))
	var out []byte
	for _, l := range ls[first+1 : last] {
		out = append(out, l...)
	}
	return out, &Fix{
		Kind:    FixCodeFenceRemoved,
		Message: fmt.Sprintf("removed the Markdown code fence (%s ... %s) wrapping the whole content: the target is not a Markdown file", opener, string(bytes.TrimSpace(ls[last]))),
		Line:    first + 1,
	}
}

// opensWithFence reports whether the first non-blank line of body, as
// splitLines cuts it, opens a fence: found without splitting every line.
func opensWithFence(body []byte) bool {
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i+1], body[i+1:]
		} else {
			body = nil
		}
		if !isBlank(line) {
			c, _ := fenceOpen(line)
			return c != 0
		}
	}
	return false
}

// removeOpenFence removes a fence that opens the content and is never
// closed: the stream was cut before the model wrote the closing fence, and
// the opener is no more part of the file than a complete wrapper would be.
// The original guards as for a whole fence.
func removeOpenFence(body []byte, ls [][]byte, orig []byte, hasOriginal bool) ([]byte, *Fix) {
	first := 0
	for first < len(ls) && isBlank(ls[first]) {
		first++
	}
	if first >= len(ls) {
		return body, nil
	}
	c, n := fenceOpen(ls[first])
	if c == 0 {
		return body, nil
	}
	for _, l := range ls[first+1:] {
		if isFenceClose(l, c, n) {
			return body, nil // closed inside: not a wrapper
		}
	}
	if hasOriginal {
		ol := splitLines(orig)
		for _, l := range ol {
			if !isBlank(l) {
				if oc, _ := fenceOpen(l); oc != 0 {
					return body, nil
				}
				break
			}
		}
	}
	off := 0
	for _, l := range ls[:first+1] {
		off += len(l)
	}
	return body[off:], &Fix{
		Kind:    FixCodeFenceRemoved,
		Message: fmt.Sprintf("removed the opening Markdown code fence (%s) whose closing fence never came: the target is not a Markdown file", string(bytes.TrimSpace(ls[first]))),
		Line:    first + 1,
	}
}

// originalEOLs returns the original's dominant line ending and, when it
// mixes "\n" and "\r\n", the endings of each line keyed by the line's text,
// in order, so shared lines keep their own.
func originalEOLs(orig []byte) ([]byte, map[string][][]byte) {
	crlf, lf := 0, 0
	ls := splitLines(orig)
	for _, l := range ls {
		switch {
		case bytes.HasSuffix(l, []byte("\r\n")):
			crlf++
		case bytes.HasSuffix(l, []byte("\n")):
			lf++
		}
	}
	eol := []byte("\n")
	if crlf > lf {
		eol = []byte("\r\n")
	}
	if crlf == 0 || lf == 0 {
		return eol, nil
	}
	m := make(map[string][][]byte)
	for _, l := range ls {
		if !bytes.HasSuffix(l, []byte("\n")) {
			continue
		}
		e := []byte("\n")
		if bytes.HasSuffix(l, []byte("\r\n")) {
			e = []byte("\r\n")
		}
		k := string(trimEOL(l))
		m[k] = append(m[k], e)
	}
	return eol, m
}

// eolDescription names the convention line endings were changed to.
func eolDescription(hasOriginal bool, eol []byte, mixed map[string][][]byte) string {
	name := "LF"
	if string(eol) == "\r\n" {
		name = "CRLF"
	}
	switch {
	case !hasOriginal:
		return "LF, the convention for a new file"
	case mixed != nil:
		return "match the existing file, which mixes LF and CRLF (new lines get " + name + ")"
	default:
		return name + " to match the existing file"
	}
}

// matchLineEndings gives every terminated line the ending eol, or, for a
// line whose text the original has too, the ending it has there. It returns
// the number of endings changed. A trailing lone "\r" (a stream cut between
// "\r" and "\n") is dropped, unless keepCR says the original ends with one
// too: the final-newline step decides what ends the file.
func matchLineEndings(body, eol []byte, mixed map[string][][]byte, keepCR bool) ([]byte, int) {
	if mixed == nil && string(eol) == "\n" && bytes.IndexByte(body, '\r') < 0 {
		// Every line already ends in "\n" and none in a lone "\r": the
		// body as it is, without a copy line by line. Its capacity is cut
		// so that an append after this never writes into the caller's.
		return body[:len(body):len(body)], 0
	}
	changed := 0
	out := make([]byte, 0, len(body)+len(body)/32)
	used := make(map[string]int)
	for _, l := range splitLines(body) {
		if !bytes.HasSuffix(l, []byte("\n")) {
			if bytes.HasSuffix(l, []byte("\r")) && !keepCR {
				l = l[:len(l)-1]
				changed++
			}
			out = append(out, l...)
			continue
		}
		text := trimEOL(l)
		old := l[len(text):]
		want := eol
		if mixed != nil {
			if es := mixed[string(text)]; len(es) > 0 {
				k := used[string(text)]
				want = es[min(k, len(es)-1)]
				used[string(text)] = k + 1
			}
		}
		if !bytes.Equal(old, want) {
			changed++
		}
		out = append(out, text...)
		out = append(out, want...)
	}
	return out, changed
}
