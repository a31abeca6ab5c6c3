package edit

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxOffset is how many lines away from the line its header names a diff
// hunk may match. Models get line numbers a little wrong; much further and
// the hunk more likely belongs elsewhere, so it fails with the place where
// it does match, for the model to confirm.
const MaxOffset = 40

// hunk is one "@@" hunk of a unified diff.
type hunk struct {
	oldStart, oldCount int
	newCount           int
	hasRange           bool     // the header has line numbers
	old, new           []string // context and '-' lines; context and '+' lines
	body               []bodyLine
	oldNoEOL, newNoEOL bool // "\ No newline at end of file" on a side
	line               int  // line of the edit with the header
}

// bodyLine is a line of a hunk body: kind is ' ', '-' or '+'; bare marks an
// empty line of the edit read as empty context.
type bodyLine struct {
	kind byte
	text string
	bare bool
}

// fileDiff is the part of a diff for one file.
type fileDiff struct {
	oldPath, newPath string
	hunks            []hunk
}

var (
	hunkRE = regexp.MustCompile(`^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)
	// badHunkRE: a header that starts with numbers but is not hunkRE.
	badHunkRE = regexp.MustCompile(`^@@+ -\d`)
)

// parseUnified reads a unified diff. It is lenient where models are
// sloppy: line counts in headers may be wrong (the lines decide), headers
// may lack numbers ("@@ ... @@": the hunk is placed by its context alone),
// file headers may be missing, an empty line is an empty context line, and
// prose or fences between hunks are skipped.
func parseUnified(content []byte) ([]fileDiff, error) {
	lines := editLines(content)
	var files []fileDiff
	var cur *hunk
	var body []bodyLine
	closeHunk := func() {
		if cur == nil {
			return
		}
		// Empty lines after a hunk are usually spacing, not context: drop
		// those the header's counts (if any) leave no room for.
		for len(body) > 0 && body[len(body)-1].bare {
			o, n := 0, 0
			for _, b := range body {
				if b.kind != '+' {
					o++
				}
				if b.kind != '-' {
					n++
				}
			}
			if cur.hasRange && o <= cur.oldCount && n <= cur.newCount {
				break
			}
			body = body[:len(body)-1]
		}
		cur.body = body
		cur.old, cur.new = sides(body)
		if len(files) == 0 {
			files = append(files, fileDiff{})
		}
		f := &files[len(files)-1]
		f.hunks = append(f.hunks, *cur)
		cur, body = nil, nil
	}
	// inCount reports whether a hunk with line numbers still expects lines,
	// so that a removed line "-- x" is not taken for a "--- " header.
	inCount := func() bool {
		if cur == nil || !cur.hasRange {
			return false
		}
		o, n := 0, 0
		for _, b := range body {
			if b.kind != '+' {
				o++
			}
			if b.kind != '-' {
				n++
			}
		}
		return o < cur.oldCount || n < cur.newCount
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") && !inCount() {
			closeHunk()
			files = append(files, fileDiff{oldPath: diffPath(l[4:]), newPath: diffPath(lines[i+1][4:])})
			i++
			continue
		}
		if strings.HasPrefix(l, "@@") {
			closeHunk()
			cur = &hunk{line: i + 1}
			if m := hunkRE.FindStringSubmatch(l); m != nil {
				cur.hasRange = true
				cur.oldStart, _ = strconv.Atoi(m[1])
				cur.oldCount = 1
				if m[2] != "" {
					cur.oldCount, _ = strconv.Atoi(m[2])
				}
				cur.newCount = 1
				if m[4] != "" {
					cur.newCount, _ = strconv.Atoi(m[4])
				}
			} else if badHunkRE.MatchString(l) {
				return nil, &SyntaxError{Format: FormatUnifiedDiff, Line: i + 1, Msg: fmt.Sprintf("bad hunk header %q; write \"@@ -OLD,COUNT +NEW,COUNT @@\" or a bare \"@@\"", l)}
			}
			continue
		}
		if cur == nil {
			continue // "diff --git", "index", prose, fences
		}
		switch {
		case l == "":
			body = append(body, bodyLine{kind: ' ', bare: true})
		case l[0] == ' ' || l[0] == '-' || l[0] == '+':
			body = append(body, bodyLine{kind: l[0], text: l[1:]})
		case l[0] == '\\':
			if len(body) == 0 {
				return nil, &SyntaxError{Format: FormatUnifiedDiff, Line: i + 1, Msg: "\"\\ No newline at end of file\" before any line of the hunk"}
			}
			switch body[len(body)-1].kind {
			case ' ':
				cur.oldNoEOL, cur.newNoEOL = true, true
			case '-':
				cur.oldNoEOL = true
			case '+':
				cur.newNoEOL = true
			}
		default:
			closeHunk() // prose or a fence after the hunk
		}
	}
	closeHunk()
	var out []fileDiff
	for _, f := range files {
		if len(f.hunks) > 0 {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, &SyntaxError{Format: FormatUnifiedDiff, Msg: "no \"@@\" hunk found"}
	}
	return out, nil
}

// diffPath strips a "---"/"+++" header's timestamp and a/ or b/ prefix.
func diffPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

// ApplyUnifiedDiff applies a unified diff for one file. Every hunk is
// placed in the original file: at the line its header names or up to
// MaxOffset lines away (nearest first; exactly, else ignoring trailing
// whitespace), or anywhere in the file, once, if its header has no line
// numbers. Hunks that overlap are rejected. A hunk whose '+' side is in
// place and whose '-' side is not is already applied. A diff with sections
// for several files gets ErrMultiFile.
func ApplyUnifiedDiff(old, content []byte) (Result, error) {
	files, err := parseUnified(content)
	if err != nil {
		return Result{Format: FormatUnifiedDiff}, err
	}
	if len(files) > 1 {
		return Result{Format: FormatUnifiedDiff}, fmt.Errorf("%w: the diff has sections for %d files (%s, ...); send one file's diff per session, or use a *** Begin Patch envelope", ErrMultiFile, len(files), files[0].newPath)
	}
	d := parseDoc(old)
	hunks := files[0].hunks
	results := make([]BlockResult, len(hunks))
	type placed struct {
		index int
		lineEdit
		h *hunk
	}
	var edits []placed
	for i := range hunks {
		h := &hunks[i]
		r, p := placeHunk(d, h)
		r.Index, r.EditLine = i+1, h.line
		results[i] = r
		if r.Status == StatusApplied {
			repl := keepContext(h.body, d.lines[p:p+len(h.old)], h.new)
			edits = append(edits, placed{i, lineEdit{p, p + len(h.old), repl}, h})
		}
	}
	slices.SortStableFunc(edits, func(a, b placed) int { return a.start - b.start })
	var kept []lineEdit
	end := 0
	for k, e := range edits {
		if k > 0 && e.start < end {
			prev := edits[k-1]
			results[e.index] = BlockResult{
				Index: e.index + 1, EditLine: e.h.line, Status: StatusOverlap, StartLine: e.start + 1, EndLine: e.end,
				Message: fmt.Sprintf("the hunk covers lines %d-%d, which hunk %d (lines %d-%d) covers too; merge the two hunks into one", e.start+1, e.end, prev.index+1, prev.start+1, prev.end),
			}
			continue
		}
		kept = append(kept, e.lineEdit)
		end = max(end, e.end)
	}
	return finish(FormatUnifiedDiff, old, results, func() []byte {
		n := len(d.lines)
		for _, e := range edits {
			if e.end == n && (e.h.oldNoEOL || e.h.newNoEOL) {
				// Only a hunk that says so changes whether the file
				// ends with a newline: models often drop the marker.
				d.finalEOL = !e.h.newNoEOL
			}
		}
		d.applyEdits(kept)
		return d.render()
	})
}

// placeHunk finds where a hunk applies in the original file and returns its
// result with the 0-based line where its '-' side starts.
func placeHunk(d *doc, h *hunk) (BlockResult, int) {
	n := len(d.lines)
	want := h.oldStart - 1 // where the '-' side should start
	if len(h.old) == 0 {
		// A pure insertion: "-K,0" inserts after line K.
		want = h.oldStart
		if !h.hasRange {
			if n == 0 {
				return BlockResult{Status: StatusApplied, StartLine: 1, Match: MatchExact}, 0
			}
			return BlockResult{Status: StatusNoMatch, Message: "the hunk has neither context lines nor line numbers, so nothing says where it goes; add a few unchanged lines around it"}, 0
		}
		if want < 0 || want > n {
			return BlockResult{Status: StatusOutOfRange, Message: fmt.Sprintf("the hunk inserts after line %d, but the file has %d lines", want, n)}, 0
		}
		if len(h.new) > 0 && want+len(h.new) <= n && equalLines(d.lines[want:want+len(h.new)], h.new) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: want + 1, EndLine: want + len(h.new), Match: MatchExact}, 0
		}
		return BlockResult{Status: StatusApplied, StartLine: want + 1, EndLine: want, Match: MatchExact}, want
	}
	want = max(want, 0)
	lo, hi := want-MaxOffset, want+MaxOffset
	if !h.hasRange {
		lo, hi = 0, n
	}
	at, m := findUnique(d.lines, h.old, lo, hi, MatchTrailingSpace)
	if h.hasRange {
		at = nearest(at, want)
	} else if len(at) > 1 {
		return BlockResult{Status: StatusAmbiguous, Match: m, Matches: oneBased(at),
			Message: fmt.Sprintf("the hunk has no line numbers and its lines match %d times, at lines %s; give the header line numbers or add context lines", len(at), lineList(oneBased(at)))}, 0
	}
	if !equalLines(h.old, h.new) {
		rat, rm := findUnique(d.lines, h.new, lo, hi, MatchTrailingSpace)
		if h.hasRange {
			rat = nearest(rat, want)
		}
		if len(rat) == 1 && len(h.new) > 0 && (len(at) == 0 || isSubrange(at[0], len(h.old), rat[0], len(h.new))) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: rat[0] + 1, EndLine: rat[0] + len(h.new), Match: rm, Offset: offset(h, rat[0])}, 0
		}
	}
	if len(at) == 1 {
		p := at[0]
		return BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p + len(h.old), Match: m, Offset: offset(h, p)}, p
	}
	r := BlockResult{Status: StatusContextMismatch, Closest: closest(d.lines, h.old)}
	if far, _ := findUnique(d.lines, h.old, 0, n, MatchTrailingSpace); len(far) == 1 {
		r.Message = fmt.Sprintf("the hunk's context and '-' lines are not within %d lines of line %d, which its header names; they match at line %d: fix the header if that is the place", MaxOffset, h.oldStart, far[0]+1)
	} else if want >= n+MaxOffset {
		r.Status = StatusOutOfRange
		r.Message = fmt.Sprintf("the hunk starts at line %d, but the file has %d lines", h.oldStart, n)
	} else {
		r.Message = fmt.Sprintf("the hunk's %d context and '-' lines do not match the file near line %d, not even ignoring trailing whitespace; copy them from the closest lines below", len(h.old), h.oldStart)
	}
	return r, 0
}

// nearest keeps the match closest to want (the earlier one on a tie).
func nearest(at []int, want int) []int {
	if len(at) <= 1 {
		return at
	}
	best := at[0]
	for _, a := range at[1:] {
		if abs(a-want) < abs(best-want) {
			best = a
		}
	}
	return []int{best}
}

func offset(h *hunk, p int) int {
	if !h.hasRange {
		return 0
	}
	return p - max(h.oldStart-1, 0)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// sides returns the old (context and '-') and new (context and '+') lines
// of a hunk or chunk body.
func sides(body []bodyLine) (old, new []string) {
	for _, b := range body {
		if b.kind != '+' {
			old = append(old, b.text)
		}
		if b.kind != '-' {
			new = append(new, b.text)
		}
	}
	return old, new
}

// keepContext returns the new lines of a body that matched found, with
// context lines taken from the file: a match that ignored whitespace must
// not rewrite the lines the edit did not mean to change.
func keepContext(body []bodyLine, found, repl []string) []string {
	out := make([]string, 0, len(repl))
	oi, ni := 0, 0
	for _, b := range body {
		switch b.kind {
		case ' ':
			out = append(out, found[oi])
			oi, ni = oi+1, ni+1
		case '-':
			oi++
		case '+':
			out = append(out, repl[ni])
			ni++
		}
	}
	return out
}
