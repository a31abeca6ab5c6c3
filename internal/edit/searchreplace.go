package edit

import (
	"fmt"
	"strings"
)

// srBlock is one search/replace block.
type srBlock struct {
	search, replace []string
	line            int // line of the edit with its SEARCH marker
}

// parseSearchReplace reads the blocks of an edit. Text outside blocks
// (file names, code fences, prose) is ignored, but a stray "=======" or
// ">>>>>>> REPLACE" is an error: it means a block lost its SEARCH marker,
// and applying the rest would silently drop it.
func parseSearchReplace(content []byte) ([]srBlock, error) {
	const (
		outside = iota
		inSearch
		inReplace
	)
	serr := func(line int, format string, args ...any) error {
		return &SyntaxError{Format: FormatSearchReplace, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var blocks []srBlock
	var cur srBlock
	state := outside
	for i, l := range editLines(content) {
		n := i + 1
		switch state {
		case outside:
			switch {
			case searchRE.MatchString(l):
				cur, state = srBlock{line: n}, inSearch
			case dividerRE.MatchString(l):
				return nil, serr(n, "%q outside a block; every block starts with \"<<<<<<< SEARCH\"", l)
			case replaceRE.MatchString(l):
				return nil, serr(n, "%q outside a block; every block starts with \"<<<<<<< SEARCH\"", l)
			}
		case inSearch:
			switch {
			case dividerRE.MatchString(l):
				state = inReplace
			case searchRE.MatchString(l):
				return nil, serr(n, "new SEARCH marker inside the block that starts at line %d; close that block with \"=======\" and \">>>>>>> REPLACE\"", cur.line)
			case replaceRE.MatchString(l):
				return nil, serr(n, "REPLACE marker before \"=======\" in the block that starts at line %d", cur.line)
			default:
				cur.search = append(cur.search, l)
			}
		case inReplace:
			switch {
			case replaceRE.MatchString(l):
				blocks, state = append(blocks, cur), outside
			case searchRE.MatchString(l):
				return nil, serr(n, "new SEARCH marker inside the block that starts at line %d; end that block with \">>>>>>> REPLACE\"", cur.line)
			default:
				cur.replace = append(cur.replace, l)
			}
		}
	}
	if state != outside {
		return nil, serr(0, "the block that starts at line %d has no \">>>>>>> REPLACE\"; the edit may be truncated", cur.line)
	}
	if len(blocks) == 0 {
		return nil, serr(0, "no \"<<<<<<< SEARCH\" block found")
	}
	return blocks, nil
}

// ApplySearchReplace applies search/replace blocks in order, each to the
// file as the blocks before it left it. A block's SEARCH text must match
// exactly one run of lines: exactly, else ignoring trailing whitespace, else
// ignoring indentation (the REPLACE text is then re-indented to the file),
// else without blank lines at its edges. A block whose REPLACE text is in
// the file once and whose SEARCH text is not (or only inside it) is already
// applied. An empty SEARCH section fills an empty file.
func ApplySearchReplace(old, content []byte) (Result, error) {
	blocks, err := parseSearchReplace(content)
	if err != nil {
		return Result{Format: FormatSearchReplace}, err
	}
	d := parseDoc(old)
	results := make([]BlockResult, len(blocks))
	for i, b := range blocks {
		results[i] = applyBlock(d, b)
		results[i].Index, results[i].EditLine = i+1, b.line
	}
	return finish(FormatSearchReplace, old, results, d.render)
}

func applyBlock(d *doc, b srBlock) BlockResult {
	if len(b.search) == 0 {
		if len(d.lines) == 0 {
			d.splice(0, 0, b.replace)
			return BlockResult{Status: StatusApplied, StartLine: 1, EndLine: 0, Match: MatchExact}
		}
		if at, m := findUnique(d.lines, b.replace, 0, len(d.lines), MatchTrailingSpace); len(at) == 1 {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: at[0] + 1, EndLine: at[0] + len(b.replace), Match: m}
		}
		return BlockResult{Status: StatusNoMatch, Message: "the SEARCH section is empty, which only fits an empty file; copy the lines to replace (or the line to insert after, and repeat it in REPLACE) into SEARCH"}
	}
	search, replace := b.search, b.replace
	at, m := findUnique(d.lines, search, 0, len(d.lines), MatchIndentation)
	if len(at) == 0 {
		// Models often add a blank line at the edge of a section.
		if s, r, ok := trimBlankEdges(search, replace); ok {
			search, replace = s, r
			at, m = findUnique(d.lines, search, 0, len(d.lines), MatchIndentation)
		}
	}
	if done, ok := alreadyApplied(d, search, replace, at); ok {
		return done
	}
	switch len(at) {
	case 0:
		return BlockResult{
			Status:  StatusNoMatch,
			Closest: closest(d.lines, search),
			Message: fmt.Sprintf("the %d SEARCH line(s) are not in the file, not even ignoring whitespace; copy them exactly from the closest lines below", len(search)),
		}
	case 1:
	default:
		return BlockResult{
			Status:  StatusAmbiguous,
			Match:   m,
			Matches: oneBased(at),
			Message: fmt.Sprintf("the SEARCH text matches %d times, at lines %s; add lines before or after it to SEARCH (and REPLACE) so that it matches once", len(at), lineList(oneBased(at))),
		}
	}
	p := at[0]
	repl := replace
	if m == MatchIndentation {
		repl = reindent(search, d.lines[p:p+len(search)], replace)
	}
	d.splice(p, p+len(search), repl)
	return BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p + len(search), Match: m}
}

// alreadyApplied reports a block whose replacement is in the file once,
// with its search text either absent or only inside the replacement (for a
// block that appends to the lines it searches for).
func alreadyApplied(d *doc, search, replace []string, at []int) (BlockResult, bool) {
	if len(replace) == 0 || equalLines(search, replace) || len(at) > 1 {
		return BlockResult{}, false
	}
	rat, m := findUnique(d.lines, replace, 0, len(d.lines), MatchTrailingSpace)
	if len(rat) != 1 {
		return BlockResult{}, false
	}
	if len(at) == 1 && !isSubrange(at[0], len(search), rat[0], len(replace)) {
		return BlockResult{}, false
	}
	return BlockResult{Status: StatusAlreadyApplied, StartLine: rat[0] + 1, EndLine: rat[0] + len(replace), Match: m}, true
}

// trimBlankEdges drops blank lines at the start and end of search, and as
// many of the blank lines at the same edges of replace.
func trimBlankEdges(search, replace []string) ([]string, []string, bool) {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	s, r := search, replace
	for len(s) > 0 && blank(s[0]) {
		s = s[1:]
		if len(r) > 0 && blank(r[0]) {
			r = r[1:]
		}
	}
	for len(s) > 0 && blank(s[len(s)-1]) {
		s = s[:len(s)-1]
		if len(r) > 0 && blank(r[len(r)-1]) {
			r = r[:len(r)-1]
		}
	}
	if len(s) == len(search) || len(s) == 0 {
		return nil, nil, false
	}
	return s, r, true
}
