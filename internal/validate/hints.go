package validate

import (
	"fmt"
	"go/ast"
	"strings"
	"unicode"
	"unicode/utf8"
)

// codeEndIssues looks for signs of a cut that a parser cannot see because
// the cut happened to leave valid syntax behind: a word cut short, a
// trailing comment that stops mid-sentence, a Go declaration left without
// its value. They only run on content the parser accepted.
func codeEndIssues(typ FileType, path string, src []byte, ls *lines, tree parsed) []issue {
	if f, ok := tree.(*ast.File); ok && typ == TypeGo {
		if is, ok := goEnd(f, ls); ok {
			return []issue{is}
		}
	}
	if is, ok := trailingComment(typ, ls); ok {
		return []issue{is}
	}
	switch typ {
	case TypeJavaScript, TypeJSX, TypeTypeScript, TypeTSX:
		if is, ok := missingSemicolon(ls); ok {
			return []issue{is}
		}
		if out, _ := tree.(string); out != "" {
			if is, ok := idleLastStatement(out, ls); ok {
				return []issue{is}
			}
		}
	case TypeTOML:
		if is, ok := tomlEmptyTable(ls); ok {
			return []issue{is}
		}
	case TypeShell:
		if is, ok := shellWithoutCommands(ls); ok {
			return []issue{is}
		}
	case TypeYAML:
		if is, ok := yamlDanglingKey(ls); ok {
			return []issue{is}
		}
		if is, ok := yamlScalarRoot(src, ls); ok {
			return []issue{is}
		}
		if is, ok := yamlCutItem(src, ls); ok {
			return []issue{is}
		}
		if is, ok := yamlOpenValue(src, ls); ok {
			return []issue{is}
		}
	}
	if typ.Class() != ClassProse && typ != TypeText {
		if is, ok := danglingJoiner(src, ls); ok {
			return []issue{is}
		}
	}
	if typ != TypeText {
		if is, ok := cutWord(typ, src, ls); ok {
			return []issue{is}
		}
	}
	return nil
}

// hint builds a truncation-hint issue at line n.
func hint(c Code, ls *lines, n int, msg string) issue {
	text := ls.text(n)
	f := Finding{
		Code: c, Category: CategoryTruncationHint, Severity: SeverityWarning,
		Line: n, Column: 1, Snippet: snippet(text), Message: msg,
	}
	return issue{Finding: f, key: issueKey(c, "", strings.TrimSpace(text))}
}

// lineComment returns the text of a line that is only a line comment in
// the syntax of t, and ok.
func lineComment(t FileType, line string) (string, bool) {
	l := strings.TrimSpace(line)
	switch t {
	case TypeGo, TypeJavaScript, TypeJSX, TypeTypeScript, TypeTSX, TypeJSONC:
		if strings.HasPrefix(l, "//") {
			return strings.TrimSpace(l[2:]), true
		}
	case TypeShell, TypeYAML, TypeTOML:
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "#!") {
			return strings.TrimSpace(strings.TrimLeft(l, "#")), true
		}
	}
	return "", false
}

// trailingComment flags content whose last line is a line comment that
// stops in the middle of a sentence: after the last code, a comment is
// usually a doc comment whose declaration never came. Tool directives
// ("//go:build", "//sys", "# vim: ...", "//# sourceMappingURL=") and
// comments that end like sentences or code do not count.
func trailingComment(typ FileType, ls *lines) (issue, bool) {
	n := ls.lastNonBlank()
	if n == 0 {
		return issue{}, false
	}
	// Looked at in place: nothing derived from the line outlives this
	// look but the messages, which are copies. The last line may be the
	// whole file (a minified one, a file of no newline), copied on every
	// check for nothing.
	raw := strings.TrimSpace(ls.view(n))
	text, ok := lineComment(typ, raw)
	if ok && strings.HasPrefix(raw, "/// <") && !strings.HasSuffix(raw, "/>") {
		// A TypeScript triple-slash directive is an XML tag: it ends with "/>".
		return hint(CodeMidStatement, ls, n, fmt.Sprintf("the content ends at line %d with a triple-slash directive that is not closed (%s, expected \"/>\"); it looks cut off: send the rest of the file", n, quoteLine(raw))), true
	}
	if ok && cutSourceMapPragma(raw) {
		return hint(CodeMidStatement, ls, n, fmt.Sprintf("the content ends at line %d with an incomplete source map comment (%s, expected a file name ending in .map); it looks cut off: send the rest of the file", n, quoteLine(raw))), true
	}
	if ok && typ.Class() == ClassCode && openBrackets(text) > 0 {
		// Code in a comment (a //sys directive, a commented-out call)
		// keeps its brackets balanced on its line; one left open on the
		// last line was cut.
		return hint(CodeMidStatement, ls, n, fmt.Sprintf("the content ends at line %d with a comment that opens a bracket and never closes it (%s); it looks cut off: send the rest of the file", n, quoteLine(raw))), true
	}
	if !ok {
		text, ok = inlineComment(typ, raw)
	}
	if !ok || text == "" || isDirectiveComment(raw, text) {
		return issue{}, false
	}
	if w := strings.ToLower(lastField(text)); connectives[w] && w == lastField(text) {
		// No sentence ends with "the", "to" or "and": whatever comes
		// before, the comment was cut.
		return hint(CodeMidSentence, ls, n, fmt.Sprintf("the content ends at line %d with a comment that stops on the word %q, in the middle of a sentence (%s); it looks cut off: send the rest of the file", n, w, quoteLine(raw))), true
	}
	if raw[0] != '#' && raw[0] != '/' {
		return issue{}, false // an inline comment: only a dangling word says it was cut
	}
	r, _ := utf8.DecodeLastRuneInString(text)
	if !unicode.IsLetter(r) && r != ',' && r != '(' && r != '[' {
		return issue{}, false
	}
	if unicode.IsLetter(r) && strings.ContainsFunc(lastField(text), unicode.IsDigit) {
		// "checksum: F50EF68C", "version v1beta1": a value, not a word.
		return issue{}, false
	}
	if typ.Class() == ClassData && (!isProseComment(text) || !hasDataBefore(typ, ls, n)) {
		// Data files often end with commented-out settings ("# key: value",
		// "# - item"); only prose after some data says a sentence was cut.
		return issue{}, false
	}
	return hint(CodeMidSentence, ls, n, fmt.Sprintf("the content ends with a comment that stops mid-sentence at line %d (%s) and no code after it; it looks cut off: send the rest of the file", n, quoteLine(raw))), true
}

// openBrackets returns how many '(' and '[' of s are left open at its end.
func openBrackets(s string) int {
	depth := 0
	for _, r := range s {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth = max(depth-1, 0)
		}
	}
	return depth
}

// inlineComment returns the text of a '#' comment that follows a value on
// a YAML, TOML or shell line ("port = 80  # the default"), and ok. The '#'
// must follow white space outside quotes, as all three languages require.
func inlineComment(t FileType, line string) (string, bool) {
	if t != TypeYAML && t != TypeTOML && t != TypeShell {
		return "", false
	}
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t') && i > 0:
			return strings.TrimSpace(line[i+1:]), true
		}
		prev = r
	}
	return "", false
}

// hasDataBefore reports whether a line before n is neither blank nor a
// comment.
func hasDataBefore(typ FileType, ls *lines, n int) bool {
	for i := 1; i < n; i++ {
		if l := ls.text(i); strings.TrimSpace(l) != "" {
			if _, ok := lineComment(typ, l); !ok {
				return true
			}
		}
	}
	return false
}

// isProseComment reports whether a comment's text reads as prose rather
// than commented-out data: two words or more, no "key: value" or
// "key = value", not a list item.
func isProseComment(text string) bool {
	return len(strings.Fields(text)) >= 2 && !strings.HasPrefix(text, "-") &&
		!strings.Contains(text, ": ") && !strings.HasSuffix(text, ":") && !strings.Contains(text, "=")
}

// isDirectiveComment reports whether a comment is a tool directive rather
// than prose: "//go:build", "//sys", "//export", "# vim: ...", "# ex: ...",
// "# -*- mode -*-", "//# sourceMappingURL=...".
func isDirectiveComment(raw, text string) bool {
	if strings.HasPrefix(raw, "//") && len(raw) > 2 && raw[2] != ' ' && raw[2] != '\t' {
		return true // Go directives and source map pragmas have no space
	}
	for _, p := range []string{"vim:", "vi:", "ex:", "-*-", "shellcheck", "eslint", "prettier", "yaml-language-server:", "sourceMappingURL", "@ts-", "kate:", "code:", "TODO", "FIXME", "XXX", "BUG", "NOTE"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// isWordRune reports whether r belongs to an identifier-like word.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// cutWord flags content that ends with a word cut short: the last word
// occurs nowhere else in the content and is not a keyword of the language,
// but a longer word that starts with it does occur, in the content or among
// the language's keywords ("requ" in JavaScript, where "require" is common;
// "stri" where "string" is a type). A longer word from the content counts
// only after the same separator as the last word (see leadIn). A cut falls inside a word far more
// often than between two, and a cut word is usually the start of one the
// file or its language uses, while a complete file rarely ends with a word
// it never uses again that is also the start of another word. Words
// without a letter are left alone (numbers are prefixes of each other all
// the time), and so are words that are only ever seen inflected ("scheme",
// "schemes"), and in prose words of one or two letters.
func cutWord(typ FileType, src []byte, ls *lines) (issue, bool) {
	n := ls.lastNonBlank()
	if n == 0 {
		return issue{}, false
	}
	raw := strings.TrimSpace(ls.text(n))
	if text, ok := lineComment(typ, raw); ok && isDirectiveComment(raw, text) {
		return issue{}, false
	}
	s := strings.TrimRightFunc(string(src), unicode.IsSpace)
	i := len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if !isWordRune(r) {
			break
		}
		i -= size
	}
	w := s[i:]
	minLen := 2
	if typ == TypeMarkdown {
		minLen = 3
	}
	kw := keywords[typ]
	if utf8.RuneCountInString(w) < minLen || strings.IndexFunc(w, unicode.IsLetter) < 0 || endWords[w] || kw[w] {
		return issue{}, false
	}
	prefixOf := ""
	for k := range kw {
		// The literals of a data language ("true", "false") are not
		// inflected forms of anything: "fals" is cut, not a word.
		inflected := inflections[k[min(len(w), len(k)):]] && typ.Class() != ClassData
		if len(k) > len(w) && strings.HasPrefix(k, w) && !inflected && (prefixOf == "" || k < prefixOf) {
			prefixOf = k
		}
	}
	rest := s[:i]
	lead := leadIn(s, i)
	for j := 0; j < len(rest); {
		k := strings.Index(rest[j:], w)
		if k < 0 {
			break
		}
		start := j + k
		end := start + len(w)
		j = end
		if start > 0 {
			if r, _ := utf8.DecodeLastRuneInString(rest[:start]); isWordRune(r) {
				continue // inside a longer word
			}
		}
		e := end
		for e < len(rest) {
			r, size := utf8.DecodeRuneInString(rest[e:])
			if !isWordRune(r) {
				break
			}
			e += size
		}
		if e == end {
			return issue{}, false // the word occurs whole: it is complete
		}
		if prefixOf == "" && !inflections[rest[end:e]] && leadIn(rest, start) == lead {
			prefixOf = rest[start:e]
		}
	}
	if prefixOf == "" {
		return issue{}, false
	}
	return hint(CodeMidWord, ls, n, fmt.Sprintf("the content ends with %q at line %d, which looks like a word cut short (%q is used, %q never on its own); it looks cut off: send the rest of the file", w, n, prefixOf, w)), true
}

// leadIn returns the rune before the word at s[i:], with the start of the
// text and all white space read as ' '. A word cut short is the start of a
// word that stands in the same place: after the same separator. A file
// extension or a domain ("nfpm.1.gz", "github.com") is not cut when the
// file elsewhere has a word it starts ("gzip", "commit"), and neither is a
// value ("group: test") that only appears elsewhere as the start of a path
// component ("./testdata/").
func leadIn(s string, i int) rune {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	if r == utf8.RuneError || unicode.IsSpace(r) {
		return ' '
	}
	return r
}

// keywords are the words each language uses whether or not a file spells
// them out before a cut: a last word that is a strict prefix of one
// ("retu", "stri") is a word cut short.
var keywords = map[FileType]map[string]bool{
	TypeGo:         wordSet("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var bool byte complex128 complex64 error float32 float64 int int16 int32 int64 int8 rune string uint uint16 uint32 uint64 uint8 uintptr any comparable true false nil iota append cap clear close copy delete len make max min new panic print println recover"),
	TypeJavaScript: jsKeywords,
	TypeJSX:        jsKeywords,
	TypeTypeScript: tsKeywords,
	TypeTSX:        tsKeywords,
	TypeShell:      wordSet("null stdout stderr if then else elif fi case esac for while until do done in function select time local export readonly declare typeset unset return exit shift break continue echo printf read source eval exec trap set test true false cd pwd mkdir rm cp mv cat grep sed awk sort uniq head tail find xargs"),
	TypeYAML:       wordSet("true false null yes no"),
	TypeTOML:       wordSet("true false inf nan"),
	TypeCSS:        wordSet("important inherit initial unset none auto block inline flex grid absolute relative fixed sticky hidden visible solid dashed dotted transparent bold normal italic center left right top bottom color background border margin padding display position width height font"),
}

func wordSet(s string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// endWords are words a complete file commonly ends with that may occur only
// once: shell block ends and literals.
var endWords = map[string]bool{
	"fi": true, "done": true, "esac": true, "end": true, "true": true, "false": true, "null": true,
	"nil": true, "None": true, "EOF": true,
}

// inflections are endings that turn a complete word into another one
// ("scheme", "schemes"): a last word that is only ever seen inflected may
// well be complete, so it does not count as cut short.
var inflections = map[string]bool{
	"s": true, "es": true, "d": true, "ed": true, "ing": true, "er": true, "ers": true, "ly": true,
	"ion": true, "ions": true, "al": true, "ally": true, "ness": true, "ment": true, "ments": true,
	"able": true, "ity": true, "ies": true, "y": true, "e": true,
}

// danglingJoiner flags content that ends with a word followed by '-' or '_'
// ("ubuntu-", "GOOS_"): a name cut right after a separator. Code parsers
// already reject most such endings; this is for values in data files and
// shell words.
func danglingJoiner(src []byte, ls *lines) (issue, bool) {
	s := strings.TrimRightFunc(string(src), unicode.IsSpace)
	if len(s) < 2 {
		return issue{}, false
	}
	last := s[len(s)-1]
	if last != '-' && last != '_' {
		return issue{}, false
	}
	if r, _ := utf8.DecodeLastRuneInString(s[:len(s)-1]); !unicode.IsLetter(r) {
		return issue{}, false
	}
	n := ls.lastNonBlank()
	return hint(CodeMidWord, ls, n, fmt.Sprintf("the content ends with %q at line %d, a name cut right after its separator; it looks cut off: send the rest of the file", lastField(s), n)), true
}
