package validate

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file holds the end-of-content hints that know one language.

// goEnd checks the last declaration of a Go file. A const declared without
// a value is valid to go/parser but not to the compiler, and at the end of
// the content it is what a cut after the name leaves behind.
func goEnd(f *ast.File, ls *lines) (issue, bool) {
	if len(f.Decls) == 0 {
		return issue{}, false
	}
	gd, ok := f.Decls[len(f.Decls)-1].(*ast.GenDecl)
	if !ok || gd.Tok != token.CONST || gd.Lparen.IsValid() || len(gd.Specs) != 1 {
		return issue{}, false
	}
	if vs := gd.Specs[0].(*ast.ValueSpec); len(vs.Values) == 0 {
		n := ls.lastNonBlank()
		f := Finding{
			Code: CodeTruncated, Category: CategoryTruncation, Severity: SeverityError,
			Line: n, Column: 1, Snippet: snippet(ls.text(n)),
			Message: fmt.Sprintf("the Go content ends with the constant %s declared without a value (expected '= value'); it looks cut off after line %d: send the rest of the file from there", vs.Names[0].Name, n),
		}
		return issue{Finding: f, key: issueKey(CodeTruncated, "const", strings.TrimSpace(ls.text(n)))}, true
	}
	return issue{}, false
}

// cutSourceMapPragma reports whether a line is a "//# sourceMappingURL="
// pragma cut short: the pragma word itself incomplete, or a URL that is
// neither a data: URL nor a file name ending in ".map", which is what
// every tool that writes the pragma names.
func cutSourceMapPragma(raw string) bool {
	const pragma = "sourceMappingURL="
	rest, ok := strings.CutPrefix(raw, "//#")
	if !ok {
		rest, ok = strings.CutPrefix(raw, "//@")
	}
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, " ")
	if len(rest) < len(pragma) {
		return len(rest) >= 3 && strings.HasPrefix(pragma, rest)
	}
	url, ok := strings.CutPrefix(rest, pragma)
	return ok && !strings.HasPrefix(url, "data:") && !strings.HasSuffix(strings.TrimSpace(url), ".map")
}

var jsKeywords = wordSet("break case catch class const continue debugger default delete do else export extends finally for function if import in instanceof let new return super switch this throw try typeof var void while with yield async await static get set of null true false undefined require module exports console prototype constructor length Object Array String Number Boolean Promise Error Symbol Map Set JSON Math")

var tsKeywords = wordSet("break case catch class const continue debugger default delete do else export extends finally for function if import in instanceof let new return super switch this throw try typeof var void while with yield async await static get set of null true false undefined require module exports console prototype constructor length Object Array String Number Boolean Promise Error Symbol Map Set JSON Math interface type enum declare namespace abstract implements private protected public readonly keyof infer never unknown any string number boolean bigint symbol object satisfies")

// missingSemicolon flags a JavaScript or TypeScript file written with
// semicolons whose last statement has none: automatic semicolon insertion
// makes "const x = requ" valid, but in a file where at least 80% of the
// lines that could end a statement end with ';', a last line that ends
// with neither ';' nor '}' is where the content stopped.
func missingSemicolon(ls *lines) (issue, bool) {
	semi, other, last := 0, 0, 0
	lastText := ""
	for n := 1; n <= len(ls.starts); n++ {
		l := jsCode(ls.text(n))
		if l == "" {
			continue
		}
		last, lastText = n, l
		r, _ := utf8.DecodeLastRuneInString(l)
		switch {
		case r == ';':
			semi++
		case isWordRune(r) || strings.ContainsRune(")]'\"`$", r):
			other++
		}
	}
	if semi+other < 5 || float64(semi) < 0.8*float64(semi+other) {
		return issue{}, false
	}
	if strings.HasSuffix(lastText, ";") || strings.HasSuffix(lastText, "}") {
		return issue{}, false
	}
	return hint(CodeMidStatement, ls, last, fmt.Sprintf("the content ends at line %d with a statement that has no ';' (%s), while the rest of the file ends its statements with ';'; it looks cut off: send the rest of the file", last, quoteLine(lastText))), true
}

// jsCode returns a line without its comment, or "" for a comment line.
// It is a line-level approximation: a "//" inside a string cuts the line
// short, which only makes the line count as something else than ';'.
func jsCode(line string) string {
	l := strings.TrimSpace(line)
	if strings.HasPrefix(l, "//") || strings.HasPrefix(l, "*") || strings.HasPrefix(l, "/*") {
		return ""
	}
	if i := strings.Index(l, " //"); i >= 0 {
		l = strings.TrimSpace(l[:i])
	}
	return l
}

// yamlDanglingKey flags YAML that ends with a mapping key and no value
// ("script:"), or a list item marker and no item: a key with nothing after
// it at the end of a file is what a cut after the colon leaves; a real file
// would give the nested block it introduces.
func yamlDanglingKey(ls *lines) (issue, bool) {
	n := ls.lastNonBlank()
	if n == 0 {
		return issue{}, false
	}
	l := strings.TrimSpace(ls.text(n))
	if l == "-" || (strings.HasSuffix(l, ":") && !strings.HasPrefix(l, "#") && !strings.ContainsAny(l, "\"'{[") && !strings.Contains(strings.TrimSuffix(l, ":"), ": ")) {
		return hint(CodeMidStatement, ls, n, fmt.Sprintf("the YAML ends at line %d with %s and no value after it; it looks cut off: send the rest of the file", n, quoteLine(l))), true
	}
	return issue{}, false
}

// idleLastStatement flags JavaScript or TypeScript whose last statement
// does nothing: a bare name or property access ("module.exp", "mod"), or a
// variable declared without a value and never used ("let handlersInstal").
// That is what a cut in the middle of the last statement of a module
// leaves, and no complete file ends that way. The statement is read from
// esbuild's output, which prints each top-level statement on its own
// unindented line in canonical form.
func idleLastStatement(out string, ls *lines) (issue, bool) {
	out = strings.TrimRight(out, "\n")
	last := out[strings.LastIndexByte(out, '\n')+1:]
	stmt, ok := strings.CutSuffix(last, ";")
	if !ok || stmt == "" || stmt[0] == ' ' {
		return issue{}, false
	}
	what := ""
	switch {
	case isPropertyPath(stmt):
		what = "an expression that does nothing"
	case strings.HasPrefix(stmt, "let ") || strings.HasPrefix(stmt, "var "):
		name := stmt[4:]
		if isPropertyPath(name) && !strings.Contains(name, ".") && wordCount(out, name) == 1 {
			what = "a variable that is declared without a value and never used"
		}
	}
	if what == "" {
		return issue{}, false
	}
	n := ls.lastNonBlank()
	return hint(CodeMidStatement, ls, n, fmt.Sprintf("the content ends at line %d with %s (%s); it looks cut off in the middle of a statement: send the rest of the file", n, what, quoteLine(ls.text(n)))), true
}

// isPropertyPath reports whether s is a name or a dotted chain of names.
func isPropertyPath(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			if !(r == '_' || r == '$' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
				return false
			}
		}
	}
	return true
}

// wordCount counts the occurrences of name in s as a whole word.
func wordCount(s, name string) int {
	n := 0
	for i := 0; ; {
		k := strings.Index(s[i:], name)
		if k < 0 {
			return n
		}
		start, end := i+k, i+k+len(name)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if !(isWordRune(before) || before == '$') && !(isWordRune(after) || after == '$') {
			n++
		}
		i = end
	}
}

// yamlScalarRoot flags YAML whose only content is one plain word or
// phrase on one line: a configuration file is a mapping or a list, and a
// lone scalar is what a cut inside the first key leaves ("githu" of
// "github: user").
func yamlScalarRoot(src []byte, ls *lines) (issue, bool) {
	n := ls.lastNonBlank()
	if n == 0 {
		return issue{}, false
	}
	first := 0
	for i := 1; i <= n; i++ {
		l := strings.TrimSpace(ls.text(i))
		if l == "" || strings.HasPrefix(l, "#") || l == "---" || strings.HasPrefix(l, "%") {
			continue
		}
		if first != 0 {
			return issue{}, false
		}
		first = i
	}
	if first == 0 {
		return issue{}, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) != 1 {
		return issue{}, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.ScalarNode || root.Style != 0 || root.Tag != "!!str" {
		return issue{}, false
	}
	return hint(CodeMidStatement, ls, first, fmt.Sprintf("the YAML is a single plain value (%s) where a mapping or list was expected; it looks cut off inside its first key: send the whole file", quoteLine(ls.text(first)))), true
}

// shellWithoutCommands flags a shell script that has a shebang or comments
// but not one command: what a cut inside the header leaves behind.
func shellWithoutCommands(ls *lines) (issue, bool) {
	n := ls.lastNonBlank()
	if n == 0 {
		return issue{}, false
	}
	for i := 1; i <= n; i++ {
		if l := strings.TrimSpace(ls.text(i)); l != "" && !strings.HasPrefix(l, "#") {
			return issue{}, false
		}
	}
	return hint(CodeMidStatement, ls, n, fmt.Sprintf("the script ends at line %d before its first command (it has only a shebang or comments); it looks cut off: send the whole script", n)), true
}
