// Package elide merges a text in which a model left out unchanged code
// ("// ... existing code ...") into the file (or the region of a file) it
// rewrites: each left-out region is taken from the file, found by the
// unchanged lines written around it. It merges only where every such
// anchor matches exactly one place, and where the parts written out in
// full do not drop the file's lines without a placeholder; anywhere else
// it refuses, saying where the anchors matched or which lines would go.
package elide

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"github.com/orion-agent/orion/internal/linediff"
)

// AmbiguousError says which elision could not be placed, and where its
// anchor matched (1-based lines of the file; none when it matched nowhere).
type AmbiguousError struct {
	Line       int // the elision's line in the text
	Anchor     string
	Candidates []int
}

// weakAnchor is the Anchor of an elision whose neighbouring lines are all
// blank or brackets alone.
const weakAnchor = "(blank lines and brackets only)"

func (e *AmbiguousError) Error() string {
	if e.Anchor == weakAnchor {
		return fmt.Sprintf("the left-out code at line %d cannot be placed: the lines next to it are blank or brackets alone, which are in the file too often to say where; write an unchanged line that says something next to it, or the code in full", e.Line)
	}
	if len(e.Candidates) == 0 {
		return fmt.Sprintf("the left-out code at line %d cannot be placed: the line next to it, %q, is not in the file", e.Line, e.Anchor)
	}
	return fmt.Sprintf("the left-out code at line %d cannot be placed: the lines next to it (%q) match the file at lines %s; write more unchanged lines around it, or the code in full", e.Line, e.Anchor, joinInts(e.Candidates))
}

// DroppedError says that a part of the text written out in full leaves
// out lines of the file it rewrites, between lines it keeps, with no
// placeholder there: read literally it deletes them, but a model that
// elides code means to keep what it does not write, so the merge refuses
// rather than guess.
type DroppedError struct {
	Line      int // the text's line where the lines go missing
	FileStart int // the file's lines left out, 1-based, inclusive
	FileEnd   int
	// Header: the line left out is a block's first line, replaced by an
	// unlike one while the block's body is kept from the file.
	Header bool
}

func (e *DroppedError) Error() string {
	if e.Header {
		return fmt.Sprintf("the text near line %d replaces line %d of the file, the first line of a block whose other lines it keeps, with lines that lose its names; write more of the block, or the code in full", e.Line, e.FileStart)
	}
	return fmt.Sprintf("the text near line %d leaves out lines %d-%d of the file with no placeholder there, which would delete them; put a placeholder where code is kept, or write those lines (use an edit to delete code)", e.Line, e.FileStart, e.FileEnd)
}

// maxAnchor bounds how many lines an anchor grows to before giving up.
const maxAnchor = 8

// Merge returns text with each elided line (1-based, ascending) replaced by
// the lines of orig it stands for, and how many it replaced.
func Merge(orig, text []byte, elided []int) ([]byte, int, error) {
	o, t := splitLines(orig), splitLines(text)
	has := newLooseSet(o)
	segs := make([][]string, 0, len(elided)+1)
	segLine := make([]int, 0, len(elided)+1) // 1-based line of each segment's start
	prev := 0
	for _, e := range elided {
		segs, segLine = append(segs, t[prev:e-1]), append(segLine, prev+1)
		prev = e
	}
	segs, segLine = append(segs, t[prev:]), append(segLine, prev+1)
	// kept[k] is the region of o elision k stands for.
	kept := make([][2]int, len(elided))
	cursor := 0
	// placeBefore finds where the region of elision k starts: after the
	// lines written before it.
	placeBefore := func(k int, seg []string, skip bool) (int, *AmbiguousError) {
		at, anchor, cands := find(o, has, seg, cursor, true, skip)
		if k == 0 && len(seg) <= len(o) && equal(o[:len(seg)], seg) {
			// The text starts as the file does: the file's start
			// anchors it, however common its lines.
			at = len(seg)
		}
		if at < 0 {
			at = alignTail(o, seg, cursor)
		}
		if at < 0 {
			return -1, &AmbiguousError{Line: elided[k], Anchor: anchor, Candidates: cands}
		}
		return at, nil
	}
	// placeAfter finds where it ends: before the lines written after it.
	placeAfter := func(k int, seg []string, start int, skip bool) (int, *AmbiguousError) {
		at, anchor, cands := find(o, has, seg, start, false, skip)
		if k == len(elided)-1 && len(seg) <= len(o)-start && equal(o[len(o)-len(seg):], seg) {
			at = len(o) - len(seg) // the text ends as the file does
		}
		if at < 0 {
			at = nearestCloser(o, has, seg, start, skip)
		}
		if at < 0 {
			return -1, &AmbiguousError{Line: elided[k], Anchor: anchor, Candidates: cands}
		}
		return at, nil
	}
	for k, e := range elided {
		start := 0
		if k > 0 || len(segs[k]) > 0 {
			if len(segs[k]) == 0 {
				return nil, 0, &AmbiguousError{Line: e, Anchor: "(another elision)"}
			}
			at, err := placeBefore(k, segs[k], true)
			if n := trailingBlank(segs[k]); err != nil && n > 0 && (n < len(segs[k]) || k == 0) {
				// Blank lines written next to the elision that the
				// file does not have there are dropped (the region
				// brings the file's own), where the line beyond them is
				// the file's: new lines past a blank are not skipped, as
				// a new method's "return this;" and "}" would then be
				// taken for the file's.
				trimmed := segs[k][:len(segs[k])-n]
				if k == 0 && len(trimmed) == 0 {
					at, err = 0, nil
				} else if at2, err2 := placeBefore(k, trimmed, false); err2 == nil {
					at, err = at2, nil
				}
				if err == nil {
					segs[k] = trimmed
				}
			}
			if err != nil {
				return nil, 0, err
			}
			start = at
		}
		end := len(o)
		if k < len(elided)-1 || len(segs[k+1]) > 0 {
			if len(segs[k+1]) == 0 {
				return nil, 0, &AmbiguousError{Line: e, Anchor: "(another elision)"}
			}
			at, err := placeAfter(k, segs[k+1], start, true)
			if n := leadingBlank(segs[k+1]); err != nil && n > 0 && (n < len(segs[k+1]) || k == len(elided)-1) {
				trimmed := segs[k+1][n:]
				if k == len(elided)-1 && len(trimmed) == 0 {
					at, err = len(o), nil
				} else if at2, err2 := placeAfter(k, trimmed, start, false); err2 == nil {
					at, err = at2, nil
				}
				if err == nil {
					segs[k+1], segLine[k+1] = trimmed, segLine[k+1]+n
				}
			}
			if err != nil {
				return nil, 0, err
			}
			end = at
		}
		if end < start || start < cursor {
			return nil, 0, &AmbiguousError{Line: e, Anchor: "(the lines around it are out of order in the file)"}
		}
		kept[k] = [2]int{start, end}
		cursor = end
	}
	// Each segment written out in full replaces the file's lines between
	// the regions kept around it.
	for k, seg := range segs {
		lo, hi := 0, len(o)
		if k > 0 {
			lo = kept[k-1][1]
		}
		if k < len(kept) {
			hi = kept[k][0]
		}
		if err := checkDropped(o, lo, hi, seg, segLine[k]); err != nil {
			return nil, 0, err
		}
	}
	var out []string
	for k := range elided {
		out = append(out, segs[k]...)
		out = append(out, o[kept[k][0]:kept[k][1]]...)
	}
	out = append(out, segs[len(segs)-1]...)
	return []byte(strings.Join(out, "")), len(elided), nil
}

// checkDropped refuses a segment that, read against the file's lines
// o[lo:hi] it replaces, deletes more of their non-blank lines in one
// place than it writes there: a change writes about as many lines as it
// removes, while lines missing between kept ones are code the model left
// out without a placeholder (or meant to keep next to an insertion).
func checkDropped(o []string, lo, hi int, seg []string, line int) error {
	id := lineIDs{}.of
	a := o[lo:hi]
	for _, ed := range linediff.DiffIDs(id(a), id(seg)) {
		del, ins := a[ed.A0:ed.A1], seg[ed.B0:ed.B1]
		if nonBlank(del) > nonBlank(ins) {
			return &DroppedError{Line: line + ed.B0, FileStart: lo + ed.A0 + 1, FileEnd: lo + ed.A1}
		}
		// A block's first line replaced while its body is kept from the
		// file: the anchor after it may be a new block's lines that look
		// like the file's ("return this;", "}"), or the text may write
		// one function where the file has another. A changed signature
		// keeps its names; one that loses a name is refused.
		for i, d := range del {
			if opensBlock(d) && !namesKept(d, ins) {
				return &DroppedError{Line: line + ed.B0, FileStart: lo + ed.A0 + i + 1, FileEnd: lo + ed.A0 + i + 1, Header: true}
			}
		}
	}
	return nil
}

func opensBlock(l string) bool {
	t := strings.TrimSpace(l)
	return brackets([]string{l}) > 0 || strings.HasSuffix(t, ":") && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "//")
}

// namesKept reports whether every name (identifier) of l is in ls.
func namesKept(l string, ls []string) bool {
	have := map[string]bool{}
	for _, x := range ls {
		for _, w := range names(x) {
			have[w] = true
		}
	}
	for _, w := range names(l) {
		if !have[w] {
			return false
		}
	}
	return true
}

func names(l string) []string {
	return strings.FieldsFunc(l, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '$') })
}

func leadingBlank(ls []string) int {
	n := 0
	for n < len(ls) && strings.TrimSpace(ls[n]) == "" {
		n++
	}
	return n
}

func trailingBlank(ls []string) int {
	n := 0
	for n < len(ls) && strings.TrimSpace(ls[len(ls)-1-n]) == "" {
		n++
	}
	return n
}

func nonBlank(ls []string) int {
	n := 0
	for _, l := range ls {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// find places the edge of seg next to an elision in o: with tail, the end
// of seg's last lines (where the elided region starts); else the start of
// its first lines (where the region ends). The anchor grows line by line
// until it matches exactly one place in the whole file; that place must be
// at or after from. Blank or punctuation-only lines alone never anchor.
func find(o []string, has looseSet, seg []string, from int, tail, skip bool) (at int, anchor string, cands []int) {
	if skip {
		seg = skipNew(has, seg, tail)
	}
	for n := 1; n <= len(seg) && n <= maxAnchor; n++ {
		a := seg[:n]
		if tail {
			a = seg[len(seg)-n:]
		}
		// Lines of brackets and punctuation alone ("}", "});") are in
		// most files many times and are often new lines that happen to
		// equal one of the file's: they anchor only with a line that
		// says something.
		if weakOnly(a) {
			continue
		}
		var hits []int
		for i := 0; i+n <= len(o); i++ {
			if equal(o[i:i+n], a) {
				hits = append(hits, i)
			}
		}
		anchor = strings.TrimSpace(strings.Join(a, ""))
		cands = cands[:0]
		for _, h := range hits {
			cands = append(cands, h+1)
		}
		switch {
		case len(hits) == 0:
			return -1, anchor, nil // a longer anchor will not match either
		case len(hits) == 1:
			if hits[0] < from {
				return -1, anchor, cands
			}
			if tail {
				return hits[0] + n, anchor, nil
			}
			return hits[0], anchor, nil
		}
	}
	if anchor == "" {
		anchor = weakAnchor // every line next to it is blank or brackets
	}
	return -1, anchor, cands
}

// skipNew drops the lines at seg's edge next to the elision that are
// nowhere in the file, not even with other blanks: new lines the model
// wrote there. They stay in the text; the anchor is the lines after them.
// A line the file has with other indentation is a changed line, not a new
// one: it ends the skipping, and as an anchor it will not match.
//
// After an elision, new lines that open a block (more brackets opened
// than closed, or lines after them indented deeper than the first) go on
// to the block's end, whatever the lines say: a new method's
// "return this;" and "}" are its own, not the file's that look the same.
func skipNew(has looseSet, seg []string, tail bool) []string {
	if tail {
		for len(seg) > 1 {
			edge := seg[len(seg)-1]
			if strings.TrimSpace(edge) == "" || has.contains(edge) {
				break
			}
			seg = seg[:len(seg)-1]
		}
		return seg
	}
	n := 0
	for n < len(seg)-1 {
		if strings.TrimSpace(seg[n]) == "" {
			// Blank lines before new ones are the new code's.
			b := n + leadingBlank(seg[n:])
			if b >= len(seg)-1 || has.contains(seg[b]) {
				break
			}
			n = b
			continue
		}
		if has.contains(seg[n]) {
			break
		}
		n++
	}
	if n == 0 {
		return seg
	}
	depth, indent := brackets(seg[:n]), indentOf(seg[0])
	for n < len(seg) && (depth > 0 || strings.TrimSpace(seg[n]) != "" && len(indentOf(seg[n])) > len(indent)) {
		depth += brackets(seg[n : n+1])
		n++
	}
	return seg[n:]
}

// brackets counts the brackets ls opens less those it closes, outside
// quoted strings.
func brackets(ls []string) int {
	d := 0
	for _, l := range ls {
		var quote rune
		esc := false
		for _, r := range l {
			switch {
			case esc:
				esc = false
			case quote != 0:
				if r == '\\' {
					esc = true
				} else if r == quote {
					quote = 0
				}
			case r == '"' || r == '\'' || r == '`':
				quote = r
			case r == '(' || r == '[' || r == '{':
				d++
			case r == ')' || r == ']' || r == '}':
				d--
			}
		}
	}
	return d
}

func hasOpener(ls []string) bool {
	for _, l := range ls {
		if brackets([]string{l}) > 0 {
			return true
		}
	}
	return false
}

func indentOf(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

// nearestCloser places the end of a region at the first line from start
// equal to the closing line written after the elision (and after any new
// lines written before it): "}", "):", "</div>" with its indentation, a
// line with no letter or digit that cannot anchor alone. "func f() {", the
// elision, "}" stands for f's body, which ends at f's closing brace, the
// first at that indentation. Placed too early, the lines after it would
// be dropped, which the merge refuses.
func nearestCloser(o []string, has looseSet, seg []string, start int, skip bool) int {
	if skip {
		rest := skipNew(has, seg, false)
		// New lines before the closer are taken as inserted there only
		// when they are whole blocks (a method added at a class's end);
		// a new statement there may as well replace one of the file's.
		if added := seg[:len(seg)-len(rest)]; len(added) > 0 && (brackets(added) != 0 || !hasOpener(added)) {
			return -1
		}
		seg = rest
	}
	if len(seg) == 0 || strings.TrimSpace(seg[0]) == "" || !weakOnly(seg[:1]) {
		return -1
	}
	for j := start; j < len(o); j++ {
		if equal(o[j:j+1], seg[:1]) {
			return j
		}
	}
	return -1
}

// alignTail places the start of a region after lines that end in
// brackets alone ("}" after a rewritten function), which anchor nothing by
// themselves: the segment starts in the file at lo (the end of the region
// before it, or the file's start), so it is aligned with the file from
// there by a line diff, and the region starts after the line its last
// line pairs with. Paired too late, the lines between would be dropped,
// which the merge refuses.
func alignTail(o, seg []string, lo int) int {
	n := len(seg) - trailingBlank(seg)
	if n == 0 || !weakOnly(seg[n-1:n]) {
		return -1
	}
	hi := min(len(o), lo+2*n+maxAnchor)
	id := lineIDs{}.of
	a, b := o[lo:hi], seg[:n]
	// The last line of b that says something and is the file's pairs
	// with a line of a; the closer is the first line after it equal to
	// b's last (at the same indentation). A diff would pair the closer
	// with any equal line as well, the last function's as the first's.
	pa, pb := -1, -1
	ai, bi := 0, 0
	pair := func(bEnd int) {
		for j := bi; j < bEnd && j < n-1; j++ {
			if !weakOnly(b[j : j+1]) {
				pa, pb = ai+(j-bi), j
			}
		}
	}
	for _, ed := range linediff.DiffIDs(id(a), id(b)) {
		pair(ed.B0)
		ai, bi = ed.A1, ed.B1
	}
	pair(n)
	if pa < 0 {
		return -1
	}
	at := -1
	for i := pa + 1; i < len(a); i++ {
		if equal(a[i:i+1], b[n-1:n]) {
			// The file's first closer after the paired line is the
			// text's first one there too: when the text closes another
			// block at that indentation before its last line (a new
			// method written after the last one in common), which of
			// its closers this is cannot be told.
			for _, l := range b[pb+1 : n-1] {
				if equal([]string{l}, b[n-1:n]) {
					return -1
				}
			}
			at = lo + i + 1
			break
		}
	}
	// Blank lines written after it pair with the file's blank lines.
	for k := n; at >= 0 && k < len(seg) && at < len(o) && strings.TrimSpace(o[at]) == ""; k++ {
		at++
	}
	return at
}

// looseSet holds a file's lines with their spacing normalised, to tell a
// line the file has (with any indentation) from a new one.
type looseSet map[string]bool

func newLooseSet(o []string) looseSet {
	s := make(looseSet, len(o))
	for _, l := range o {
		s[loose(l)] = true
	}
	return s
}

func (s looseSet) contains(l string) bool { return s[loose(l)] }

func loose(l string) string { return strings.Join(strings.Fields(l), " ") }

func equal(a, b []string) bool {
	for i := range a {
		if strings.TrimRight(a[i], " \t\r\n") != strings.TrimRight(b[i], " \t\r\n") {
			return false
		}
	}
	return true
}

// weakOnly reports lines with no letter or digit: blank, or brackets and
// punctuation alone.
func weakOnly(ls []string) bool {
	for _, l := range ls {
		if strings.IndexFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			return false
		}
	}
	return true
}

// splitLines splits b into lines that keep their endings.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// lineIDs numbers lines by their text without trailing blanks, one number
// per distinct text, so that runs of lines compare as integers.
type lineIDs map[string]int

// of returns the numbers of ls, numbering texts not seen before.
func (ids lineIDs) of(ls []string) []int {
	out := make([]int, len(ls))
	for i, l := range ls {
		key := strings.TrimRight(l, " \t\r\n")
		n, ok := ids[key]
		if !ok {
			n = len(ids)
			ids[key] = n
		}
		out[i] = n
	}
	return out
}
