package validate

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// markdownIssues checks Markdown: code fences must be closed, and the
// document should not end in a heading with nothing under it or in the
// middle of a sentence. It is a small line scanner, not a full CommonMark
// parser: fences, front matter and the last block are all it needs.
func markdownIssues(src []byte, ls *lines) []issue {
	n := len(ls.starts)
	first := 1
	// Front matter (--- ... --- or +++ ... +++) is data, not prose.
	if t := ls.text(1); t == "---" || t == "+++" {
		for i := 2; i <= n; i++ {
			if ls.text(i) == t || (t == "---" && ls.text(i) == "...") {
				first = i + 1
				break
			}
		}
	}

	var fenceChar byte
	fenceLen, fenceLine, fenceCol := 0, 0, 0
	for i := first; i <= n; i++ {
		line := []byte(ls.text(i))
		if fenceChar != 0 {
			if isFenceClose(line, fenceChar, fenceLen) {
				fenceChar = 0
			}
			continue
		}
		if c, l := fenceOpen(line); c != 0 {
			fenceChar, fenceLen, fenceLine = c, l, i
			fenceCol = len(line) - len(bytes.TrimLeft(line, " \t")) + 1
		}
	}
	if fenceChar != 0 {
		opener := strings.TrimSpace(ls.text(fenceLine))
		f := Finding{
			Code: CodeUnclosedFence, Category: CategoryTruncation, Severity: SeverityError,
			Line: fenceLine, Column: fenceCol, Snippet: snippet(ls.text(fenceLine)),
			Message: fmt.Sprintf("the code fence %s opened at line %d is never closed: expected a closing %s line; if the content was cut off inside the code block, send the rest",
				"`"+opener+"`", fenceLine, strings.Repeat(string(fenceChar), fenceLen)),
		}
		return []issue{{Finding: f, key: issueKey(f.Code, opener, "")}}
	}
	if is, ok := markdownEnding(ls, first); ok {
		return []issue{is}
	}
	return nil
}

// markdownEnding looks at the last block of a Markdown document for a
// heading with nothing under it or prose that stops mid-sentence.
func markdownEnding(ls *lines, first int) (issue, bool) {
	last := ls.lastNonBlank()
	if last < first {
		return issue{}, false
	}
	text := ls.text(last)
	trimmed := strings.TrimSpace(text)
	mk := func(c Code, msg string) (issue, bool) {
		f := Finding{
			Code: c, Category: CategoryTruncationHint, Severity: SeverityWarning,
			Line: last, Column: 1, Snippet: snippet(text), Message: msg,
		}
		return issue{Finding: f, key: issueKey(c, "", trimmed)}, true
	}

	// A document of headings only is a skeleton or a fragment meant to be
	// assembled with others, not a section cut short.
	onlyHeadings := true
	for i := first; i <= last && onlyHeadings; i++ {
		if l := ls.text(i); strings.TrimSpace(l) != "" && atxLevel(l) == 0 {
			onlyHeadings = false
		}
	}
	if onlyHeadings {
		return issue{}, false
	}

	// ATX heading, or setext underline under a paragraph line.
	if level := atxLevel(text); level > 0 {
		return mk(CodeEmptyHeading, fmt.Sprintf("the content ends with the heading %s at line %d and nothing under it; the section looks cut off: write its content", quoteLine(trimmed), last))
	}
	if isSetextUnderline(trimmed) && last > first {
		prev := strings.TrimSpace(ls.text(last - 1))
		if prev != "" && atxLevel(prev) == 0 && !isListItem(prev) && !strings.HasPrefix(prev, "|") {
			return mk(CodeEmptyHeading, fmt.Sprintf("the content ends with the heading %s at line %d and nothing under it; the section looks cut off: write its content", quoteLine(prev), last-1))
		}
	}

	// Collect the last paragraph: lines back to a blank line.
	start := last
	for start > first && strings.TrimSpace(ls.text(start-1)) != "" {
		start--
	}
	var para []string
	for i := start; i <= last; i++ {
		para = append(para, strings.TrimSpace(ls.text(i)))
	}

	// A table whose rows end with '|' and whose last row does not.
	if strings.HasPrefix(trimmed, "|") && !strings.HasSuffix(trimmed, "|") && len(para) >= 2 &&
		strings.HasSuffix(para[len(para)-2], "|") {
		return mk(CodeMidSentence, fmt.Sprintf("the table row at line %d stops before its closing '|'; it looks cut off: finish the row and the table", last))
	}
	if strings.HasPrefix(trimmed, "|") || isFenceCloseAny(trimmed) || isLinkDefinition(trimmed) {
		return issue{}, false
	}
	// An indented code block (four spaces or a tab after a blank line)
	// holds code, not prose.
	if first := ls.text(start); (strings.HasPrefix(first, "    ") || strings.HasPrefix(first, "\t")) && !isListItem(strings.TrimSpace(first)) {
		return issue{}, false
	}

	joined := strings.Join(para, " ")
	if what := openInline(joined); what != "" {
		return mk(CodeMidSentence, fmt.Sprintf("the content ends inside %s at line %d; it looks cut off: finish the sentence", what, last))
	}
	if endsWithURL(trimmed) {
		return issue{}, false
	}

	body := trimmed
	listItem := isListItem(body)
	body = stripBlockMarkers(body)
	if body == "" {
		return issue{}, false
	}
	r, _ := utf8.DecodeLastRuneInString(body)
	lastWord := strings.ToLower(strings.TrimFunc(lastField(body), func(r rune) bool { return !unicode.IsLetter(r) }))
	switch {
	case r == ',' || r == '(' || r == '[' || r == '&' || r == '–' || r == '—' || r == '/' || r == '=' || r == '+':
		return mk(CodeMidSentence, fmt.Sprintf("the content ends with %q at line %d, in the middle of a sentence; it looks cut off: finish the sentence", string(r), last))
	case unicode.IsLetter(r) && connectives[lastWord] && !strings.HasSuffix(body, "`"):
		return mk(CodeMidSentence, fmt.Sprintf("the content ends with the word %q at line %d, in the middle of a sentence; it looks cut off: finish the sentence", lastWord, last))
	case listItem:
		// List items often end without punctuation; only the signs above
		// count for them.
		return issue{}, false
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		words := len(strings.Fields(joined))
		if words >= 12 || hasSentenceEnd(joined) {
			return mk(CodeMidSentence, fmt.Sprintf("the prose at line %d ends without punctuation, in the middle of a sentence (%s); it looks cut off: finish the sentence", last, quoteLine(trimmed)))
		}
	}
	return issue{}, false
}

// connectives are words a sentence does not end with.
var connectives = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "but": true, "nor": true,
	"of": true, "to": true, "in": true, "into": true, "on": true, "at": true, "by": true, "for": true,
	"from": true, "with": true, "without": true, "as": true, "than": true, "that": true, "which": true,
	"who": true, "whose": true, "is": true, "are": true, "was": true, "were": true, "be": true,
	"if": true, "when": true, "while": true, "because": true, "so": true, "then": true, "this": true,
	"these": true, "its": true, "their": true, "your": true, "our": true, "can": true, "will": true,
	"should": true, "must": true, "may": true, "not": true, "via": true, "such": true,
}

// atxLevel returns the level of an ATX heading line ("## Title"), or 0.
func atxLevel(line string) int {
	l := strings.TrimLeft(line, " ")
	if len(line)-len(l) > 3 {
		return 0
	}
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(l) && l[n] != ' ' && l[n] != '\t') {
		return 0
	}
	return n
}

// isSetextUnderline reports whether a trimmed line is "===" or "---".
func isSetextUnderline(l string) bool {
	if l == "" {
		return false
	}
	return strings.Trim(l, "=") == "" || strings.Trim(l, "-") == ""
}

// isFenceCloseAny reports whether a trimmed line is a bare fence.
func isFenceCloseAny(l string) bool {
	return len(l) >= 3 && (strings.Trim(l, "`") == "" || strings.Trim(l, "~") == "")
}

// isLinkDefinition reports whether a trimmed line is a link reference
// definition ("[name]: https://...") or a footnote.
func isLinkDefinition(l string) bool {
	if !strings.HasPrefix(l, "[") {
		return false
	}
	i := strings.Index(l, "]:")
	return i > 0 && !strings.Contains(l[:i], "](")
}

// isListItem reports whether a trimmed line starts a list item.
func isListItem(l string) bool {
	if len(l) >= 2 && (l[0] == '-' || l[0] == '*' || l[0] == '+') && l[1] == ' ' {
		return true
	}
	i := 0
	for i < len(l) && i < 9 && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' '
}

// stripBlockMarkers removes blockquote and list markers and trailing
// emphasis from a line, leaving its text.
func stripBlockMarkers(l string) string {
	for {
		switch {
		case strings.HasPrefix(l, ">"):
			l = strings.TrimSpace(l[1:])
		case isListItem(l):
			l = strings.TrimSpace(l[strings.IndexByte(l, ' ')+1:])
			if strings.HasPrefix(l, "[ ] ") || strings.HasPrefix(l, "[x] ") {
				l = l[4:]
			}
		default:
			return l
		}
	}
}

// openInline names an inline construct left open at the end of a
// paragraph: a code span, a link, a parenthesis, strong emphasis, an HTML
// tag or comment. Code spans are removed first, since brackets inside them
// are text.
func openInline(p string) string {
	if strings.Contains(p, "<!--") && !strings.Contains(p[strings.LastIndex(p, "<!--"):], "-->") {
		return "an HTML comment"
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		if p[i] != '`' {
			b.WriteByte(p[i])
			i++
			continue
		}
		n := 0
		for i+n < len(p) && p[i+n] == '`' {
			n++
		}
		fence := p[i : i+n]
		j := i + n
		for {
			k := strings.Index(p[j:], fence)
			if k < 0 {
				return "a code span (expected a closing " + fence + ")"
			}
			j += k
			if j+n < len(p) && p[j+n] == '`' {
				// A longer run of backticks does not close this span.
				for j < len(p) && p[j] == '`' {
					j++
				}
				continue
			}
			break
		}
		i = j + n
	}
	t := b.String()
	depth := map[byte]int{}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case '\\':
			i++
		case '[', '(':
			depth[c]++
		case ']':
			depth['['] = max(depth['[']-1, 0)
		case ')':
			depth['('] = max(depth['(']-1, 0)
		}
	}
	switch {
	case depth['['] > 0:
		return "a link or bracket (expected ']')"
	case depth['('] > 0:
		return "a parenthesis or link target (expected ')')"
	case strings.Count(t, "**")%2 == 1:
		return "strong emphasis (expected a closing **)"
	}
	if i := strings.LastIndexByte(t, '<'); i >= 0 && !strings.Contains(t[i:], ">") && i+1 < len(t) && (unicode.IsLetter(rune(t[i+1])) || t[i+1] == '/') {
		return "an HTML tag (expected '>')"
	}
	return ""
}

// endsWithURL reports whether a line's last word is a URL, whose last
// character can be anything.
func endsWithURL(l string) bool {
	w := lastField(l)
	return strings.Contains(w, "://") || strings.HasPrefix(w, "www.")
}

// lastField returns the last whitespace-separated word of s.
func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// hasSentenceEnd reports whether a paragraph contains the end of a
// sentence before its last word: then it is prose, and its last sentence
// should end the same way.
func hasSentenceEnd(p string) bool {
	for _, sep := range []string{". ", "! ", "? ", ".) ", ".\" "} {
		if strings.Contains(p, sep) {
			return true
		}
	}
	return false
}
