package edit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Patch types: the values of PatchSpec.Type.
const (
	// PatchInsertBeforeLine inserts the text before line Line (1 to the
	// number of lines + 1, which appends).
	PatchInsertBeforeLine = "insert_before_line"
	// PatchInsertAfterLine inserts the text after line Line (0, which
	// prepends, to the number of lines).
	PatchInsertAfterLine = "insert_after_line"
	// PatchReplaceLines replaces lines StartLine to EndLine, inclusive.
	PatchReplaceLines = "replace_lines"
	// PatchPrepend inserts the text at the start of the file.
	PatchPrepend = "prepend"
	// PatchInsertBeforeMarker inserts the text before the line where
	// Marker starts; Marker must match once.
	PatchInsertBeforeMarker = "insert_before_marker"
	// PatchInsertAfterMarker inserts the text after the line where Marker
	// ends; Marker must match once.
	PatchInsertAfterMarker = "insert_after_marker"
	// PatchReplaceBlock replaces the lines from the one where StartMarker
	// (which must match once) starts through the one where the first
	// EndMarker after it ends. The marker lines are replaced too, as with
	// replace_lines: a model names a block by its first and last lines
	// ("func f() {" ... "}") and sends it whole. KeepMarkers keeps them
	// and replaces only the lines between, for generated regions
	// ("// BEGIN GENERATED" ... "// END GENERATED").
	PatchReplaceBlock = "replace_block"
	// PatchReplacePattern replaces matches of the regular expression
	// Pattern; there must be exactly Count of them (default 1), or any
	// number above zero for "all".
	PatchReplacePattern = "replace_pattern"
	// PatchReplaceAll replaces every occurrence of the literal Pattern (or
	// exactly Count of them, when given).
	PatchReplaceAll = "replace_all"
)

// CountAll is the Count that accepts any number of matches.
const CountAll = "all"

// PatchSpec says where the streamed text goes in the file. Line-based
// types take the text as whole lines (a missing final newline is implied).
// replace_pattern and replace_all take it as a string, without the one
// newline that ends the streamed content unless the matched text ends
// with a newline too.
//
// Markers and patterns match the file with "\n" line endings, whatever
// the file uses; a regular expression (RE2 syntax) has ^ and $ match at
// line boundaries.
type PatchSpec struct {
	// Type is one of the Patch* constants.
	Type string `json:"type"`
	// Line is the line of insert_before_line and insert_after_line.
	Line int `json:"line,omitempty"`
	// StartLine and EndLine are the 1-based, inclusive lines of
	// replace_lines.
	StartLine int `json:"start_line,omitempty"`
	EndLine   int `json:"end_line,omitempty"`
	// Marker locates insert_before_marker and insert_after_marker.
	Marker string `json:"marker,omitempty"`
	// StartMarker and EndMarker delimit replace_block.
	StartMarker string `json:"start_marker,omitempty"`
	EndMarker   string `json:"end_marker,omitempty"`
	// Pattern is the regular expression of replace_pattern and the literal
	// of replace_all.
	Pattern string `json:"pattern,omitempty"`
	// Regex makes the markers regular expressions instead of literals.
	Regex bool `json:"regex,omitempty"`
	// Count is how many matches replace_pattern and replace_all require:
	// a number, or "all". JSON may give it as a number or a string.
	Count Count `json:"count,omitempty"`
	// KeepMarkers makes replace_block keep its marker lines.
	KeepMarkers bool `json:"keep_markers,omitempty"`
	// Expand makes replace_pattern expand $1, ${name} in the text. It is
	// off by default because the text is code, where "$" is common.
	Expand bool `json:"expand,omitempty"`
}

// Count is a match count: a positive number or "all".
type Count string

// UnmarshalJSON accepts a number as well as a string, since models write
// "count": 2 as often as "count": "2".
func (c *Count) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		*c = Count(n.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("count: want a number or \"all\", got %s", b)
	}
	*c = Count(s)
	return nil
}

// parse returns the count, or 0 for "all".
func (c Count) parse(def string) (int, error) {
	s := strings.TrimSpace(strings.ToLower(string(c)))
	if s == "" {
		s = def
	}
	if s == CountAll {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a positive number or %q", CountAll)
	}
	return n, nil
}

// fields lists the fields each type takes besides type,
// so that Validate can reject a field the type would silently ignore.
var fields = map[string][]string{
	PatchInsertBeforeLine:   {"line"},
	PatchInsertAfterLine:    {"line"},
	PatchReplaceLines:       {"start_line", "end_line"},
	PatchPrepend:            {},
	PatchInsertBeforeMarker: {"marker", "regex"},
	PatchInsertAfterMarker:  {"marker", "regex"},
	PatchReplaceBlock:       {"start_marker", "end_marker", "regex", "keep_markers"},
	PatchReplacePattern:     {"pattern", "count", "expand"},
	PatchReplaceAll:         {"pattern", "count"},
}

// set returns the fields of s that are set, by JSON name.
func (s PatchSpec) set() map[string]string {
	m := map[string]string{}
	add := func(name string, ok bool, v string) {
		if ok {
			m[name] = v
		}
	}
	add("line", s.Line != 0, strconv.Itoa(s.Line))
	add("start_line", s.StartLine != 0, strconv.Itoa(s.StartLine))
	add("end_line", s.EndLine != 0, strconv.Itoa(s.EndLine))
	add("marker", s.Marker != "", s.Marker)
	add("start_marker", s.StartMarker != "", s.StartMarker)
	add("end_marker", s.EndMarker != "", s.EndMarker)
	add("pattern", s.Pattern != "", s.Pattern)
	add("regex", s.Regex, "true")
	add("count", s.Count != "", string(s.Count))
	add("keep_markers", s.KeepMarkers, "true")
	add("expand", s.Expand, "true")
	return m
}

// Validate checks the spec without a file: the type is known, its fields
// are there and in range, regular expressions compile, and no field is
// set that the type does not use (a model that sets one meant something
// else).
func (s PatchSpec) Validate() error {
	allowed, ok := fields[s.Type]
	if !ok {
		return invalid("type", s.Type, "want one of insert_before_line, insert_after_line, replace_lines, prepend, insert_before_marker, insert_after_marker, replace_block, replace_pattern, replace_all")
	}
	set := s.set()
	for _, name := range sortedKeys(set) {
		if !slices.Contains(allowed, name) {
			return invalid(name, set[name], "%s does not take %s (it takes %s)", s.Type, name, takes(allowed))
		}
	}
	switch s.Type {
	case PatchInsertBeforeLine:
		if s.Line < 1 {
			return invalid("line", strconv.Itoa(s.Line), "insert_before_line needs line >= 1")
		}
	case PatchInsertAfterLine:
		if s.Line < 0 {
			return invalid("line", strconv.Itoa(s.Line), "insert_after_line needs line >= 0 (0 inserts at the top)")
		}
	case PatchReplaceLines:
		if s.StartLine < 1 {
			return invalid("start_line", strconv.Itoa(s.StartLine), "replace_lines needs start_line >= 1")
		}
		if s.EndLine < s.StartLine {
			return invalid("end_line", strconv.Itoa(s.EndLine), "replace_lines needs end_line >= start_line (%d); both are inclusive", s.StartLine)
		}
	case PatchInsertBeforeMarker, PatchInsertAfterMarker:
		if _, err := s.matcher("marker", s.Marker, s.Regex); err != nil {
			return err
		}
	case PatchReplaceBlock:
		if _, err := s.matcher("start_marker", s.StartMarker, s.Regex); err != nil {
			return err
		}
		if _, err := s.matcher("end_marker", s.EndMarker, s.Regex); err != nil {
			return err
		}
	case PatchReplacePattern, PatchReplaceAll:
		if _, err := s.matcher("pattern", s.Pattern, s.Type == PatchReplacePattern); err != nil {
			return err
		}
		if _, err := s.Count.parse("1"); err != nil {
			return invalid("count", string(s.Count), "%v", err)
		}
	}
	return nil
}

func takes(allowed []string) string {
	if len(allowed) == 0 {
		return "no other fields"
	}
	return strings.Join(allowed, ", ")
}

// finder finds the byte ranges where a marker or pattern matches.
type finder func(text string) [][]int

// matcher compiles a marker or pattern.
func (s PatchSpec) matcher(field, v string, regex bool) (finder, error) {
	if v == "" {
		return nil, invalid(field, "", "%s needs %s", s.Type, field)
	}
	v = strings.ReplaceAll(v, "\r\n", "\n")
	if !regex {
		return func(text string) [][]int {
			var at [][]int
			for off := 0; ; {
				i := strings.Index(text[off:], v)
				if i < 0 {
					return at
				}
				at = append(at, []int{off + i, off + i + len(v)})
				off += i + len(v)
			}
		}, nil
	}
	re, err := regexp.Compile("(?m)" + v)
	if err != nil {
		return nil, invalid(field, v, "not a valid regular expression (RE2 syntax): %v", err)
	}
	return func(text string) [][]int { return re.FindAllStringIndex(text, -1) }, nil
}

// ApplyPatch applies spec to old with text as the new text. The result
// has one block, whose status says what happened: a marker or pattern not
// found (no_match), found more than once (ambiguous, with every match), a
// count that does not fit (count_mismatch), lines past the end
// (out_of_range). A patch whose text is already where it would go (next to
// its marker, in place of its pattern, or in place of its lines) is
// already_applied and changes nothing. Line-number types cannot tell a
// resend from a second insertion: they apply again.
func ApplyPatch(old []byte, spec PatchSpec, text []byte) (Result, error) {
	return ApplyPatchAs(old, spec, text, Charset{})
}

// ApplyPatchAs is ApplyPatch on a file in the charset its project names,
// as ApplyAs.
func ApplyPatchAs(old []byte, spec PatchSpec, text []byte, cs Charset) (Result, error) {
	if err := spec.Validate(); err != nil {
		return Result{Format: FormatPatch}, err
	}
	return onText(old, cs, FormatPatch, func(old []byte) (Result, error) { return applyPatchText(old, spec, text) })
}

func applyPatchText(old []byte, spec PatchSpec, text []byte) (Result, error) {
	d := parseDoc(old)
	r := applySpec(d, spec, string(text))
	r.Index = 1
	if r.Status == StatusApplied && string(d.render()) == string(old) {
		r.Status = StatusAlreadyApplied
	}
	return finish(FormatPatch, old, []BlockResult{r}, d.render)
}

func applySpec(d *doc, s PatchSpec, text string) BlockResult {
	lines, _ := splitText(text)
	n := len(d.lines)
	insert := func(p int) BlockResult {
		d.splice(p, p, lines)
		return BlockResult{Status: StatusApplied, StartLine: p + 1, EndLine: p}
	}
	switch s.Type {
	case PatchPrepend:
		if len(lines) > 0 && n >= len(lines) && equalLines(d.lines[:len(lines)], lines) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: 1, EndLine: len(lines)}
		}
		return insert(0)
	case PatchInsertBeforeLine:
		if s.Line > n+1 {
			return outOfRange(fmt.Sprintf("insert_before_line %d is past the end of the file, which has %d lines; use 1 to %d (%d appends)", s.Line, n, n+1, n+1))
		}
		return insert(s.Line - 1)
	case PatchInsertAfterLine:
		if s.Line > n {
			return outOfRange(fmt.Sprintf("insert_after_line %d is past the end of the file, which has %d lines; use 0 (the top) to %d", s.Line, n, n))
		}
		return insert(s.Line)
	case PatchReplaceLines:
		if s.EndLine > n {
			return outOfRange(fmt.Sprintf("replace_lines %d-%d goes past the end of the file, which has %d lines", s.StartLine, s.EndLine, n))
		}
		d.splice(s.StartLine-1, s.EndLine, lines)
		return BlockResult{Status: StatusApplied, StartLine: s.StartLine, EndLine: s.EndLine}
	case PatchInsertBeforeMarker, PatchInsertAfterMarker:
		find, _ := s.matcher("marker", s.Marker, s.Regex)
		first, last, r, ok := findOnce(d, find, "marker", s.Marker, s.Regex, lines)
		if !ok {
			return r
		}
		if s.Type == PatchInsertBeforeMarker {
			if len(lines) > 0 && first >= len(lines) && equalLines(d.lines[first-len(lines):first], lines) {
				return BlockResult{Status: StatusAlreadyApplied, StartLine: first - len(lines) + 1, EndLine: first}
			}
			return insert(first)
		}
		if len(lines) > 0 && last+1+len(lines) <= n && equalLines(d.lines[last+1:last+1+len(lines)], lines) {
			return BlockResult{Status: StatusAlreadyApplied, StartLine: last + 2, EndLine: last + 1 + len(lines)}
		}
		return insert(last + 1)
	case PatchReplaceBlock:
		find, _ := s.matcher("start_marker", s.StartMarker, s.Regex)
		first, startLast, r, ok := findOnce(d, find, "start_marker", s.StartMarker, s.Regex, lines)
		if !ok {
			return r
		}
		findEnd, _ := s.matcher("end_marker", s.EndMarker, s.Regex)
		// The end marker is looked for from the line after the start
		// marker, so that "{" ... "}" does not end on the start line.
		rest := strings.Join(d.lines[startLast+1:], "\n")
		var at [][]int
		if startLast+1 < len(d.lines) {
			at = findEnd(rest)
		}
		if len(at) == 0 {
			return BlockResult{Status: StatusNoMatch, StartLine: first + 1,
				Message: fmt.Sprintf("end_marker %q is not in the file after the start_marker on line %d", s.EndMarker, startLast+1)}
		}
		endFirst := startLast + 1 + strings.Count(rest[:at[0][0]], "\n")
		endLast := startLast + 1 + strings.Count(rest[:max(at[0][1]-1, at[0][0])], "\n")
		if s.KeepMarkers {
			d.splice(startLast+1, endFirst, lines)
			return BlockResult{Status: StatusApplied, StartLine: startLast + 2, EndLine: endFirst}
		}
		d.splice(first, endLast+1, lines)
		return BlockResult{Status: StatusApplied, StartLine: first + 1, EndLine: endLast + 1}
	case PatchReplacePattern, PatchReplaceAll:
		return replaceMatches(d, s, text)
	}
	return BlockResult{Status: StatusNoMatch, Message: "unknown patch type " + s.Type}
}

func outOfRange(msg string) BlockResult {
	return BlockResult{Status: StatusOutOfRange, Message: msg}
}

// findOnce finds the only match of a marker and returns its first and last
// 0-based lines. When it fails, the result says why; a marker that is gone
// while the text is in the file (replace_block, resent) is already
// applied.
func findOnce(d *doc, find finder, field, v string, regex bool, text []string) (first, last int, r BlockResult, ok bool) {
	content := d.text()
	at := find(content)
	if k := len(at); k > 0 && at[k-1][0] == len(content) && (content == "" || strings.HasSuffix(content, "\n")) {
		// An empty match after the last newline is on no line.
		at = at[:k-1]
	}
	lineOf := func(off int) int { return strings.Count(content[:off], "\n") }
	switch len(at) {
	case 1:
		end := max(at[0][1]-1, at[0][0])
		return lineOf(at[0][0]), lineOf(end), BlockResult{}, true
	case 0:
		if len(text) > 0 {
			if tat, m := findUnique(d.lines, text, 0, len(d.lines), MatchTrailingSpace); len(tat) == 1 {
				return 0, 0, BlockResult{Status: StatusAlreadyApplied, StartLine: tat[0] + 1, EndLine: tat[0] + len(text), Match: m}, false
			}
		}
		r = BlockResult{Status: StatusNoMatch, Message: fmt.Sprintf("%s %q is not in the file", field, v)}
		if !regex {
			lines, _ := splitText(v)
			r.Closest = closest(d.lines, lines)
		}
		return 0, 0, r, false
	}
	var b strings.Builder
	var lines []int
	for i, a := range at {
		l := lineOf(a[0])
		lines = append(lines, l+1)
		if i < 8 {
			fmt.Fprintf(&b, "\n  line %d: %s", l+1, clip(d.lines[l], 100))
		}
	}
	if len(at) > 8 {
		fmt.Fprintf(&b, "\n  and %d more", len(at)-8)
	}
	return 0, 0, BlockResult{Status: StatusAmbiguous, Matches: lines,
		Message: fmt.Sprintf("%s %q matches %d times; it must match once: make it longer (a whole line, or several) or use line numbers:%s", field, v, len(at), b.String())}, false
}

// replaceMatches does replace_pattern and replace_all.
func replaceMatches(d *doc, s PatchSpec, text string) BlockResult {
	regex := s.Type == PatchReplacePattern
	def := "1"
	if !regex {
		def = CountAll
	}
	want, _ := s.Count.parse(def)
	content := d.text()
	text = strings.ReplaceAll(text, "\r\n", "\n")
	find, _ := s.matcher("pattern", s.Pattern, regex)
	at := find(content)
	lineOf := func(off int) int { return strings.Count(content[:off], "\n") + 1 }
	var lines []int
	for _, a := range at {
		lines = append(lines, lineOf(a[0]))
	}
	switch {
	case len(at) == 0:
		if t := strings.TrimSuffix(text, "\n"); t != "" && !s.Expand && strings.Contains(content, t) {
			return BlockResult{Status: StatusAlreadyApplied, Message: fmt.Sprintf("pattern %q is not in the file and the text is", s.Pattern)}
		}
		r := BlockResult{Status: StatusNoMatch, Message: fmt.Sprintf("pattern %q is not in the file", s.Pattern)}
		if !regex {
			pl, _ := splitText(s.Pattern)
			r.Closest = closest(d.lines, pl)
		}
		return r
	case want != 0 && len(at) != want:
		return BlockResult{Status: StatusCountMismatch, Matches: lines,
			Message: fmt.Sprintf("pattern %q matches %d times, at lines %s, but count is %d; set count to %d or \"all\", or make the pattern match only what you mean", s.Pattern, len(at), lineList(lines), want, len(at))}
	}
	var re *regexp.Regexp
	var subs [][]int
	if regex && s.Expand {
		re = regexp.MustCompile("(?m)" + strings.ReplaceAll(s.Pattern, "\r\n", "\n"))
		subs = re.FindAllStringSubmatchIndex(content, -1)
	}
	var b strings.Builder
	prev := 0
	for i, a := range at {
		b.WriteString(content[prev:a[0]])
		repl := text
		// The streamed text ends with the newline before the end marker;
		// it belongs in the file only when the match took one.
		if !strings.HasSuffix(content[a[0]:a[1]], "\n") {
			repl = strings.TrimSuffix(repl, "\n")
		}
		if re != nil {
			repl = string(re.ExpandString(nil, repl, content, subs[i]))
		}
		b.WriteString(repl)
		prev = a[1]
	}
	b.WriteString(content[prev:])
	d.setText(b.String())
	return BlockResult{Status: StatusApplied, StartLine: lines[0], EndLine: lineOf(max(at[len(at)-1][1]-1, at[len(at)-1][0])), Matches: lines}
}

// clip shortens a line for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
