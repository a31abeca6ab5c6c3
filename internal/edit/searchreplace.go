package edit

import (
	"fmt"
	"path"
	"strings"
)

// srBlock is one search/replace block.
type srBlock struct {
	search, replace []string
	line            int    // line of the edit with its SEARCH marker
	path            string // the file it names; "" when none was named
}

// parseSearchReplace reads the blocks of an edit that must apply to one
// file.
func parseSearchReplace(content []byte) ([]srBlock, Dialect, error) {
	return parseBlocks(content)
}

// parseBlocks reads the blocks of an edit and the file each names. Text
// outside blocks (code fences, prose) is ignored, but a stray "=======" or
// REPLACE marker is an error: it means a block lost its SEARCH marker, and
// applying the rest would silently drop it.
//
// A block's file is named as Aider's prompts ask: the path alone on a line
// right before the opening fence, or (diff-fenced) right after it, before
// the SEARCH marker. A block that names none edits the file the block
// before it named, as in Aider; the first ones edit the session's target.
func parseBlocks(content []byte) ([]srBlock, Dialect, error) {
	const (
		outside = iota
		inSearch
		inReplace
	)
	serr := func(line int, format string, args ...any) error {
		return &SyntaxError{Format: FormatSearchReplace, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	lines := editLines(content)
	var blocks []srBlock
	var cur srBlock
	dialect := DialectNone
	sticky := ""
	state := outside
	for i, l := range lines {
		n := i + 1
		if dialect == DialectCline && isMarker(l) && !clineStrictRE.MatchString(l) {
			return nil, dialect, serr(n, "%q is not a marker Cline takes: markers stand alone on their line, with one space before SEARCH or REPLACE and nothing after (\"------- SEARCH\", \"=======\", \"+++++++ REPLACE\")", l)
		}
		switch state {
		case outside:
			switch {
			case searchRE.MatchString(l):
				if dialect == DialectNone && (clineSearchRE.MatchString(l) || inClineTool(lines[:i])) && !clineStrictRE.MatchString(l) {
					return nil, DialectCline, serr(n, "%q is not a marker Cline takes: markers stand alone on their line, with one space before SEARCH or REPLACE and nothing after (\"------- SEARCH\", \"=======\", \"+++++++ REPLACE\")", l)
				}
				cur, state = srBlock{line: n}, inSearch
				p, fenced := blockPath(lines[:i])
				if p != "" {
					sticky = p
				}
				cur.path = sticky
				if dialect == DialectNone {
					switch {
					case clineSearchRE.MatchString(l), inClineTool(lines[:i]):
						dialect = DialectCline
					case fenced:
						dialect = DialectAiderFenced
					default:
						dialect = DialectAider
					}
				}
			case dividerRE.MatchString(l), replaceRE.MatchString(l):
				return nil, dialect, serr(n, "%q outside a block; every block starts with a SEARCH marker (\"<<<<<<< SEARCH\" or \"------- SEARCH\")", l)
			}
		case inSearch:
			switch {
			case dividerRE.MatchString(l):
				state = inReplace
			case nestedSearchIsText(dialect, l):
				cur.search = append(cur.search, l)
			case searchRE.MatchString(l):
				return nil, dialect, serr(n, "new SEARCH marker inside the block that starts at line %d; close that block with \"=======\" and its REPLACE marker", cur.line)
			case replaceRE.MatchString(l):
				return nil, dialect, serr(n, "REPLACE marker before \"=======\" in the block that starts at line %d", cur.line)
			default:
				cur.search = append(cur.search, l)
			}
		case inReplace:
			switch {
			case replaceRE.MatchString(l):
				blocks, state = append(blocks, cur), outside
			case nestedSearchIsText(dialect, l):
				cur.replace = append(cur.replace, l)
			case searchRE.MatchString(l):
				return nil, dialect, serr(n, "new SEARCH marker inside the block that starts at line %d; end that block with its REPLACE marker", cur.line)
			default:
				cur.replace = append(cur.replace, l)
			}
		}
	}
	if state != outside {
		end := "\">>>>>>> REPLACE\""
		if dialect == DialectCline {
			end = "\"+++++++ REPLACE\""
		}
		return nil, dialect, serr(0, "the block that starts at line %d has no final %s marker; the edit may be cut (truncated): resend it whole", cur.line, end)
	}
	if len(blocks) == 0 {
		return nil, dialect, serr(0, "no SEARCH block found")
	}
	return blocks, dialect, nil
}

// nestedSearchIsText reports a SEARCH marker inside a block that is the
// file's own text: Aider ends a SEARCH part only at its divider and a
// REPLACE part only at its marker, so a SEARCH marker there is a line of
// the file (a test fixture, a document about the format). An unindented
// one is still refused: far more often it is the next block, after a
// block that lost its divider or its REPLACE marker, and saying so beats
// a SEARCH text that matches nothing.
func nestedSearchIsText(d Dialect, l string) bool {
	return (d == DialectAider || d == DialectAiderFenced) && l != "" && (l[0] == ' ' || l[0] == '\t') && searchRE.MatchString(l)
}

// isMarker reports a line any dialect would take as a block marker.
func isMarker(l string) bool {
	return searchRE.MatchString(l) || dividerRE.MatchString(l) || replaceRE.MatchString(l)
}

// inClineTool reports blocks inside Cline's replace_in_file tool call (its
// "<diff>" tag), which names the dialect even with the older "<<<<<<<"
// markers that Aider shares.
func inClineTool(before []string) bool {
	for k := len(before) - 1; k >= 0; k-- {
		switch strings.TrimSpace(before[k]) {
		case "<diff>":
			return true
		case "</diff>", "</replace_in_file>":
			return false
		}
	}
	return false
}

// isFence reports a Markdown code fence line.
func isFence(l string) bool {
	t := strings.TrimSpace(l)
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// blockPath finds the path a block names in the (up to three) lines before
// its SEARCH marker, looking back across fence lines only, as Aider does.
// fenced reports a path inside the fence (diff-fenced).
func blockPath(before []string) (p string, fenced bool) {
	seenFence := false
	for k := len(before) - 1; k >= 0 && k >= len(before)-3; k-- {
		l := before[k]
		if isFence(l) {
			// "```path/to/file.py" names the file on the fence itself.
			t := strings.TrimLeft(strings.TrimSpace(l), "`~")
			if c := cleanPath(t); c != "" && strings.ContainsAny(c, "./") {
				return c, false
			}
			seenFence = true
			continue
		}
		if c := cleanPath(l); c != "" {
			// A path after the fence is inside it: diff-fenced. A fence
			// before it, with none between it and the marker, would be
			// seen first.
			return c, !seenFence && k > 0 && isFence(before[k-1])
		}
		return "", false
	}
	return "", false
}

// extensionless are file names without a dot that a path line may hold.
var extensionless = map[string]bool{
	"Makefile": true, "makefile": true, "GNUmakefile": true, "Dockerfile": true, "Containerfile": true,
	"Rakefile": true, "Gemfile": true, "Procfile": true, "Justfile": true, "justfile": true,
	"Vagrantfile": true, "Jenkinsfile": true, "LICENSE": true, "README": true, "CHANGELOG": true,
	"AUTHORS": true, "NOTICE": true, "CODEOWNERS": true, "BUILD": true, "WORKSPACE": true,
}

// cleanPath takes a file path from a line as models write it: in Markdown
// emphasis or backticks, after "#" or before ":" (Aider strips the same).
// It returns "" for a line that is not a path: prose has spaces, and a
// bare word is a path only when it looks like a file name.
func cleanPath(l string) string {
	s := strings.TrimSpace(l)
	s = strings.TrimRight(s, ":")
	s = strings.TrimLeft(s, "#")
	s = strings.TrimSpace(s)
	s = strings.Trim(s, "`")
	s = strings.Trim(s, "*")
	s = strings.ReplaceAll(s, `\_`, "_")
	switch {
	case s == "", s == "...", strings.ContainsAny(s, " \t\"'<>|"):
		return ""
	case strings.ContainsAny(s, "/\\"):
		return s
	case strings.Contains(strings.TrimLeft(s, "."), "."), strings.HasPrefix(s, ".") && len(s) > 1:
		return s
	case extensionless[path.Base(s)]:
		return s
	}
	return ""
}

// ApplySearchReplace applies search/replace blocks to one file, in order,
// each to the file as the blocks before it left it. Paths the blocks name
// are ignored: ApplyFiles reads them. The rules of the dialect apply:
//
// Aider's blocks (and any without Cline's markers): a block's SEARCH text
// must match exactly one run of lines: exactly, else ignoring trailing
// whitespace, else ignoring indentation (the REPLACE text is then
// re-indented to the file), else without blank lines at its edges. An
// empty SEARCH section fills an empty file.
//
// Cline's blocks are searched for after the previous block's change
// (Cline's prompt lists them in file order, and the first match there is
// replaced), else anywhere if they match once; they match exactly, then
// line by line ignoring surrounding whitespace, then, for three lines or
// more, by their first and last lines alone (Cline's block anchor, which
// must match once). An empty SEARCH section replaces the whole file.
//
// In both, a block whose REPLACE text is in the file once and whose SEARCH
// text is not (or only inside it) is already applied.
//
// A REPLACE part may leave out lines of the region its SEARCH part matched
// with a placeholder, and an Aider block may leave out lines of both with
// "..." lines (see elision.go).
func ApplySearchReplace(old, content []byte) (Result, error) {
	return applySearchReplace("", old, content)
}

// applySearchReplace is ApplySearchReplace on the file called name (for
// the comment forms of a placeholder in its language).
func applySearchReplace(name string, old, content []byte) (Result, error) {
	blocks, dialect, err := parseSearchReplace(content)
	if err != nil {
		return Result{Format: FormatSearchReplace, Dialect: dialect}, err
	}
	res, err := applyBlocks(name, old, blocks, dialect)
	res.Dialect = dialect
	return res, err
}

// applyBlocks applies the blocks of one file, called name where a block
// names none.
func applyBlocks(name string, old []byte, blocks []srBlock, dialect Dialect) (Result, error) {
	d := parseDoc(old)
	results := make([]BlockResult, len(blocks))
	cursor := 0
	for i, b := range blocks {
		n := name
		if b.path != "" {
			n = b.path
		}
		if dialect == DialectCline {
			results[i], cursor = applyClineBlock(d, b, cursor, n)
		} else if r, ok := applyDots(d, b, n); ok {
			results[i] = r
		} else {
			results[i] = applyBlock(d, b, n)
		}
		results[i].Index, results[i].EditLine = i+1, b.line
	}
	res, err := finish(FormatSearchReplace, old, results, d.render)
	for _, r := range results {
		res.ElisionsMerged += r.ElisionsMerged
	}
	return res, err
}

func applyBlock(d *doc, b srBlock, name string) BlockResult {
	if len(b.search) == 0 {
		if len(d.lines) == 0 {
			d.splice(0, 0, b.replace)
			return BlockResult{Status: StatusApplied, StartLine: 1, EndLine: 0, Match: MatchExact}
		}
		if at, m := findUnique(d.lines, b.replace, 0, len(d.lines), MatchTrailingSpace); len(at) == 1 {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: at[0] + 1, EndLine: at[0] + len(b.replace), Match: m}
		}
		// Aider appends the REPLACE text here; a block resent to create a
		// file that now exists would then duplicate it.
		return BlockResult{Status: StatusNoMatch, Message: "the SEARCH section is empty, which only creates a new file or fills an empty one, and this file has content; copy the lines to replace (or the line to insert after, and repeat it in REPLACE) into SEARCH"}
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
		return ambiguous(at, m)
	}
	p := at[0]
	repl := replace
	if m == MatchIndentation {
		repl = reindent(search, d.lines[p:p+len(search)], replace)
	}
	repl, n, msg := fillBlock(name, d.lines[p:p+len(search)], repl)
	d.splice(p, p+len(search), repl)
	return BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p + len(search), Match: m, ElisionsMerged: n, Message: msg}
}

// fillBlock fills the placeholders of a block's REPLACE lines from the
// region its SEARCH lines matched. One that cannot be placed is left as
// written, and the message says why: validation refuses it as a lazy
// placeholder, as it would have before.
func fillBlock(name string, region, repl []string) ([]string, int, string) {
	out, n, err := fillReplace(name, region, repl)
	if err != nil {
		return repl, 0, UnmergedPlaceholder + err.Error()
	}
	return out, n, ""
}

func ambiguous(at []int, m Match) BlockResult {
	return BlockResult{
		Status:  StatusAmbiguous,
		Match:   m,
		Matches: oneBased(at),
		Message: fmt.Sprintf("the SEARCH text matches %d times, at lines %s; add lines before or after it to SEARCH (and REPLACE) so that it matches once", len(at), lineList(oneBased(at))),
	}
}

// applyClineBlock applies one of Cline's blocks at or after cursor and
// returns the cursor for the next one.
func applyClineBlock(d *doc, b srBlock, cursor int, name string) (BlockResult, int) {
	n := len(d.lines)
	if len(b.search) == 0 {
		// Cline: an empty SEARCH creates a new file or replaces the whole
		// one.
		if n > 0 && equalLines(trimTrailingBlank(d.lines), trimTrailingBlank(b.replace)) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: 1, EndLine: n, Match: MatchExact}, n
		}
		d.splice(0, n, b.replace)
		return BlockResult{Status: StatusApplied, StartLine: 1, EndLine: n, Match: MatchExact}, len(b.replace)
	}
	search, replace := b.search, b.replace
	// Cline replaces the first match after the previous block: its prompt
	// has the model list blocks in file order, so repeated text is told
	// apart by the blocks before it. A fuzzy anchor match must be unique.
	var others []int
	find := func(lo int, first bool) ([]int, Match) {
		at, m := findUnique(d.lines, search, lo, n, MatchIndentation)
		if len(at) > 1 && first {
			others = oneBased(at[1:])
			at = at[:1]
		}
		if len(at) == 0 && len(search) >= 3 {
			at, m = findAnchor(d.lines, search, lo), MatchAnchor
		}
		return at, m
	}
	at, m := find(cursor, true)
	if len(at) == 0 && cursor > 0 {
		// Out of order: Cline refuses it; a block that matches once in
		// the whole file is unambiguous all the same.
		at, m = find(0, false)
	}
	if done, ok := alreadyApplied(d, search, replace, at); ok {
		return done, done.EndLine
	}
	switch len(at) {
	case 0:
		return BlockResult{
			Status:  StatusNoMatch,
			Closest: closest(d.lines, search),
			Message: fmt.Sprintf("the %d SEARCH line(s) are not in the file, not even ignoring whitespace or by their first and last lines; copy them exactly from the closest lines below", len(search)),
		}, cursor
	case 1:
	default:
		return ambiguous(at, m), cursor
	}
	// Cline writes a line-trimmed match's replacement as the model wrote
	// it, not re-indented: its prompt has the model copy indentation.
	p := at[0]
	repl, filled, msg := fillBlock(name, d.lines[p:p+len(search)], replace)
	d.splice(p, p+len(search), repl)
	r := BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p + len(search), Match: m, ElisionsMerged: filled, Message: msg}
	if others != nil {
		r.Message = strings.TrimPrefix(r.Message+"; ", "; ") + fmt.Sprintf("the first match after the previous block was replaced; the SEARCH text is also at line(s) %s", lineList(others))
	}
	return r, p + len(repl)
}

// findAnchor finds the runs of len(search) lines, at or after lo, whose
// first and last lines equal search's ignoring surrounding whitespace
// (Cline's block anchor fallback, for blocks of three lines or more).
func findAnchor(lines, search []string, lo int) []int {
	first, last := strings.TrimSpace(search[0]), strings.TrimSpace(search[len(search)-1])
	if first == "" || last == "" {
		return nil // blank anchors would match almost anywhere
	}
	var at []int
	for i := lo; i+len(search) <= len(lines); i++ {
		if strings.TrimSpace(lines[i]) == first && strings.TrimSpace(lines[i+len(search)-1]) == last {
			at = append(at, i)
		}
	}
	return at
}

func trimTrailingBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
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
