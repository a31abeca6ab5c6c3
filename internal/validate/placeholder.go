package validate

import (
	"bytes"
	"fmt"
	"strings"
)

// A lazy placeholder is a line a model writes instead of code or text it
// did not want to repeat ("// ... rest of code unchanged"). Written to disk
// it deletes what it stands for, so it is worse than a syntax error: the
// file usually still parses.
//
// A line is a candidate only when it is nothing but a comment, in the
// comment syntax of the file's type, or a bare ellipsis in a language where
// that is not valid code. Its text is lower-cased, "…" becomes "...", and
// it is matched against the rules in placeholderRules. Comments that merely
// mention such words in a longer sentence ("the rest of the buffer is left
// unchanged when n is 0") are not placeholders: rules require short
// comments built around the phrase.

// PlaceholderRule is one row of the placeholder table, exported so the
// table can be listed (README, tests, a client's documentation).
type PlaceholderRule struct {
	// Name is a short identifier for the rule.
	Name string `json:"name"`
	// Examples are lines the rule flags.
	Examples []string `json:"examples"`
	// Description says when the rule applies.
	Description string `json:"description"`
	match       func(c placeholderCandidate) bool
}

// placeholderCandidate is a comment-only line, ready to match.
type placeholderCandidate struct {
	text     string   // the comment's text, normalised
	words    []string // text split into words, punctuation trimmed
	ellipsis bool     // the text contains "..."
	// alone is set when the line is not part of a comment block of more
	// than two lines: longer blocks are documentation, where "..." and
	// "the rest of the code" are prose or examples. The ellipsis-only rule
	// is stricter: its line must have no comment line next to it at all.
	alone, single bool
	// block is set for a self-contained block comment (/* */, <!-- -->).
	block bool
	bare  bool // a bare "..." line, no comment syntax
}

// lazyNouns are what a placeholder says was left out.
var lazyNouns = map[string]bool{
	"code": true, "implementation": true, "implementations": true, "file": true, "content": true,
	"contents": true, "method": true, "methods": true, "function": true, "functions": true, "logic": true,
	"body": true, "section": true, "sections": true, "test": true, "tests": true, "style": true,
	"styles": true, "import": true, "imports": true, "config": true, "configuration": true,
	"component": true, "components": true, "class": true, "classes": true, "props": true,
	"properties": true, "fields": true, "cases": true, "rules": true, "lines": true, "part": true,
	"parts": true, "everything": true, "handlers": true, "routes": true, "helpers": true, "types": true,
	"declarations": true, "definitions": true, "entries": true, "items": true, "keys": true,
	"settings": true, "options": true, "markup": true, "elements": true, "text": true, "steps": true,
	"functionality": true, "stuff": true, "members": true, "exports": true, "dependencies": true,
}

// lazyMarkers are words that, next to an ellipsis, say "this stands for
// something not written here". Weaker words (etc, more, here, above) are
// left out: real comments use them next to an ellipsis all the time.
var lazyMarkers = map[string]bool{
	"rest": true, "remaining": true, "remainder": true, "existing": true, "previous": true,
	"original": true, "unchanged": true, "omitted": true, "same": true, "other": true,
	"brevity": true, "continued": true, "snip": true, "snipped": true, "elided": true,
	"untouched": true, "intact": true, "kept": true, "preserved": true,
}

// placeholderRules is the placeholder table.
var placeholderRules = []PlaceholderRule{
	{
		Name:        "ellipsis",
		Examples:    []string{"// ...", "# ...", "/* ... */", "<!-- ... -->", "{/* ... */}", "...", "// …"},
		Description: "a comment that is only an ellipsis, standing alone (not inside a longer comment block, where it is usually part of an example); or a bare ellipsis line in a language where it is not valid code",
		match: func(c placeholderCandidate) bool {
			return c.ellipsis && len(c.words) == 0 && (c.single || c.block || c.bare)
		},
	},
	{
		Name:        "ellipsis_phrase",
		Examples:    []string{"// ... rest of code unchanged", "# ... existing code ...", "// ... other methods ...", "/* ... previous styles ... */", "// ... (same as before)", "// ... more methods"},
		Description: "a short comment (at most 10 words, not inside a comment block of more than two lines) with an ellipsis and a word such as rest, remaining, existing, previous, original, unchanged, omitted, same, other, snip or brevity, or with an ellipsis and at most three words naming code (\"// ... more methods\")",
		match: func(c placeholderCandidate) bool {
			if !c.ellipsis || len(c.words) == 0 || len(c.words) > 10 || !(c.alone || c.block) {
				return false
			}
			for _, w := range c.words {
				if lazyMarkers[w] || lazyNouns[w] && len(c.words) <= 3 {
					return true
				}
			}
			return false
		},
	},
	{
		Name:        "rest_of",
		Examples:    []string{"// rest of the code remains the same", "# remaining implementation unchanged", "// rest of file", "// remainder of the function omitted"},
		Description: "a short comment (at most 8 words, not inside a longer comment block) that starts with rest of, remainder of, or remaining and names code",
		match: func(c placeholderCandidate) bool {
			if len(c.words) < 2 || len(c.words) > 8 || !(c.alone || c.block) {
				return false
			}
			start := c.words[0] == "rest" || c.words[0] == "remainder" || c.words[0] == "remaining"
			return start && anyIn(c.words[1:], lazyNouns)
		},
	},
	{
		Name:        "existing_here",
		Examples:    []string{"# existing code here", "// existing implementation unchanged", "// previous methods remain the same", "// keep existing code", "// other functions unchanged", "// original content omitted for brevity"},
		Description: "a short comment (at most 8 words, not inside a longer comment block) naming code (code, implementation, methods, ...), saying it is existing, previous, original, other, remaining or kept, and that it is here, unchanged, the same, as before, omitted or kept",
		match: func(c placeholderCandidate) bool {
			if len(c.words) < 2 || len(c.words) > 8 || !anyIn(c.words, lazyNouns) || !(c.alone || c.block) {
				return false
			}
			qualifier, state := false, false
			for _, w := range c.words {
				switch w {
				case "existing", "previous", "original", "other", "remaining", "rest", "keep":
					qualifier = true
				}
				switch w {
				case "here", "unchanged", "omitted", "brevity", "untouched", "intact", "preserved", "kept", "elided", "snipped", "goes":
					state = true
				}
			}
			for _, p := range []string{"remains the same", "remain the same", "stays the same", "stay the same", "as before", "as is"} {
				if strings.Contains(c.text, p) {
					state = true
				}
			}
			if c.words[0] == "keep" && len(c.words) <= 4 && (c.words[1] == "existing" || c.words[1] == "the") {
				// "keep existing code": the whole comment is the instruction.
				state = true
			}
			return qualifier && state
		},
	},
	{
		Name:        "same_as",
		Examples:    []string{"// same as before", "# same as above", "// unchanged", "// (unchanged)", "// omitted for brevity", "// code omitted"},
		Description: "a comment of at most 4 words that is only \"same as before/above\", \"unchanged\" or \"omitted (for brevity)\"",
		match: func(c placeholderCandidate) bool {
			if !(c.alone || c.block) {
				return false
			}
			switch strings.Join(c.words, " ") {
			case "same as before", "same as above", "same as previous", "same as original", "same as existing",
				"as before", "as above", "unchanged", "no changes", "omitted", "omitted for brevity",
				"code omitted", "code omitted for brevity", "truncated for brevity", "snip":
				return true
			}
			return false
		},
	},
}

// PlaceholderRules returns the placeholder table.
func PlaceholderRules() []PlaceholderRule {
	return append([]PlaceholderRule(nil), placeholderRules...)
}

func anyIn(words []string, set map[string]bool) bool {
	for _, w := range words {
		if set[w] {
			return true
		}
	}
	return false
}

// commentStyle says which comment syntaxes a file type has.
type commentStyle struct {
	slash, hash, block, xml bool // "//", "#", "/* */", "<!-- -->"
	bareEllipsis            bool // a bare "..." line is not valid code
}

func styleOf(t FileType) commentStyle {
	switch t {
	case TypeGo, TypeJavaScript, TypeJSX, TypeTypeScript, TypeTSX:
		return commentStyle{slash: true, block: true, bareEllipsis: true}
	case TypeCSS:
		// CSS has only /* */, but models write // placeholders in it too.
		return commentStyle{slash: true, block: true, bareEllipsis: true}
	case TypeJSON, TypeJSONC, TypeJSONLines:
		return commentStyle{slash: true, block: true, bareEllipsis: true}
	case TypeShell, TypeTOML:
		return commentStyle{hash: true}
	case TypeYAML:
		// A bare "..." ends a YAML document: valid.
		return commentStyle{hash: true}
	case TypeXML:
		return commentStyle{xml: true}
	case TypeMarkdown:
		// "#" starts a heading in Markdown, and code blocks hold any syntax.
		return commentStyle{xml: true}
	default:
		return commentStyle{slash: true, hash: true, block: true, xml: true}
	}
}

// commentText returns the text of a line that is nothing but a comment in
// style s, whether it is a self-contained block comment, and ok.
func commentText(line string, s commentStyle) (text string, block, ok bool) {
	l := strings.TrimSpace(line)
	switch {
	case s.slash && strings.HasPrefix(l, "//"):
		return strings.TrimLeft(l, "/"), false, true
	case s.hash && strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "#!"):
		return strings.TrimLeft(l, "#"), false, true
	case s.block && strings.HasPrefix(l, "{/*") && strings.HasSuffix(l, "*/}"):
		return l[3 : len(l)-3], true, true
	case s.block && strings.HasPrefix(l, "/*") && strings.HasSuffix(l, "*/") && len(l) >= 4:
		return strings.Trim(l[2:len(l)-2], "*"), true, true
	case s.xml && strings.HasPrefix(l, "<!--") && strings.HasSuffix(l, "-->") && len(l) >= 7:
		return l[4 : len(l)-3], true, true
	}
	return "", false, false
}

// isCommentLine reports whether a line is a line comment in style s.
func isCommentLine(line string, s commentStyle) bool {
	l := strings.TrimSpace(line)
	return s.slash && strings.HasPrefix(l, "//") || s.hash && strings.HasPrefix(l, "#") ||
		s.block && (strings.HasPrefix(l, "*") || strings.HasPrefix(l, "/*"))
}

// mayBeCandidate is candidate's own first test, on a line it need not
// keep: whether the line is a comment in style s, or a bare ellipsis where
// s takes one.
func mayBeCandidate(line string, s commentStyle) bool {
	if _, _, ok := commentText(line, s); ok {
		return true
	}
	t := strings.TrimSpace(line)
	return s.bareEllipsis && (t == "..." || t == "…")
}

// candidate builds the candidate for line n, or ok=false.
func candidate(ls *lines, n int, s commentStyle) (placeholderCandidate, bool) {
	line := ls.text(n)
	text, block, ok := commentText(line, s)
	bare := false
	if !ok {
		t := strings.TrimSpace(line)
		if !s.bareEllipsis || (t != "..." && t != "…") {
			return placeholderCandidate{}, false
		}
		text, bare = t, true
	}
	text = strings.ToLower(strings.ReplaceAll(text, "…", "..."))
	c := placeholderCandidate{text: strings.Join(strings.Fields(text), " "), block: block, bare: bare}
	c.ellipsis = strings.Contains(text, "...")
	for _, w := range strings.Fields(strings.ReplaceAll(text, "...", " ")) {
		w = strings.TrimFunc(w, func(r rune) bool {
			return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
		})
		if w != "" {
			c.words = append(c.words, w)
		}
	}
	prev, next := isCommentLine(ls.text(n-1), s), isCommentLine(ls.text(n+1), s)
	c.single = !prev && !next
	c.alone = c.single || prev && !next && !isCommentLine(ls.text(n-2), s) || next && !prev && !isCommentLine(ls.text(n+2), s)
	return c, true
}

// matchPlaceholder returns the rule a line matches, or nil.
func matchPlaceholder(c placeholderCandidate) *PlaceholderRule {
	for i := range placeholderRules {
		if placeholderRules[i].match(c) {
			return &placeholderRules[i]
		}
	}
	return nil
}

// placeholderLine is a placeholder found at a line.
type placeholderLine struct {
	line int
	key  string
	rule *PlaceholderRule
}

// findPlaceholders lists the placeholder lines of src. In Markdown only
// HTML comments outside code blocks count; code blocks show code, and a
// "// ..." in an example is not a placeholder for the document.
func findPlaceholders(t FileType, ls *lines) []placeholderLine {
	s := styleOf(t)
	// Block comments are followed line by line only in a text that opens
	// one: most hold no "/*", and one look over the whole text costs a
	// tenth of two looks at each of its lines.
	blocks := s.block && bytes.Contains(ls.src, []byte("/*"))
	var out []placeholderLine
	var fenceChar byte
	fenceLen := 0
	inBlock := false
	for n := 1; n <= len(ls.starts); n++ {
		// Looked at in place: a line is copied (candidate) only when it
		// may be a placeholder, not every line of the file.
		line := ls.view(n)
		if t == TypeMarkdown {
			if fenceChar != 0 {
				if isFenceClose([]byte(line), fenceChar, fenceLen) {
					fenceChar = 0
				}
				continue
			}
			if c, l := fenceOpen([]byte(line)); c != 0 {
				fenceChar, fenceLen = c, l
				continue
			}
		}
		if blocks {
			// Lines inside a /* ... */ comment that spans lines are
			// documentation; only a one-line block comment can be a
			// placeholder.
			if inBlock {
				if strings.Contains(line, "*/") {
					inBlock = false
				}
				continue
			}
			// Contains first: it scans a long line many times faster
			// than LastIndex, and most lines hold no "/*".
			if i := lastBlockOpen(line); i >= 0 && !strings.Contains(line[i:], "*/") && !strings.Contains(line[:i], "//") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				inBlock = true
				continue
			}
		}
		if !mayBeCandidate(line, s) {
			continue
		}
		c, ok := candidate(ls, n, s)
		if !ok {
			continue
		}
		if r := matchPlaceholder(c); r != nil {
			out = append(out, placeholderLine{line: n, key: c.text, rule: r})
		}
	}
	return out
}

// placeholders reports the placeholders of the text of ls that the text
// of orig (nil for none) does not have: one occurrence in the original
// excuses one in the new content.
func placeholders(t FileType, ls, orig *lines) []issue {
	found := findPlaceholders(t, ls)
	if len(found) == 0 {
		return nil
	}
	had := make(map[string]int)
	if orig != nil {
		for _, p := range findPlaceholders(t, orig) {
			had[p.key]++
		}
	}
	var out []issue
	for _, p := range found {
		text := ls.text(p.line)
		f := Finding{
			Code: CodeLazyPlaceholder, Category: CategoryPlaceholder, Severity: SeverityWarning,
			Line: p.line, Column: len([]rune(text)) - len([]rune(strings.TrimLeft(text, " \t"))) + 1,
			Snippet: snippet(text),
			Message: fmt.Sprintf("line %d, %s, is a placeholder for content that was left out; writing it would delete that content: replace the line with the full text it stands for", p.line, quoteLine(text)),
		}
		if had[p.key] > 0 {
			had[p.key]--
			f.Preexisting, f.Severity = true, SeverityInfo
			f.Message += " (the existing file has the same line)"
		}
		out = append(out, issue{Finding: f, key: issueKey(f.Code, p.key, "")})
	}
	return out
}

// NewPlaceholderLines lists the 1-based lines of src that are lazy
// placeholders the original does not have, in order: the lines a merge of
// elided text into the original must fill.
func NewPlaceholderLines(target string, src, orig []byte) []int {
	var out []int
	for _, is := range placeholders(Detect(target, src), newLines(src), newLines(orig)) {
		if !is.Finding.Preexisting {
			out = append(out, is.Finding.Line)
		}
	}
	return out
}

// lastBlockOpen is strings.LastIndex(line, "/*"), quick on the lines that
// hold none.
func lastBlockOpen(line string) int {
	if !strings.Contains(line, "/*") {
		return -1
	}
	return strings.LastIndex(line, "/*")
}
