package validate

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// CheckOptions configure [Check].
type CheckOptions struct {
	// EndMarkerSeen says the stream ended with the session's end marker (or
	// the client declared the end of its input). When false, Check reports
	// no_end_marker: nothing but the content says it is complete.
	EndMarkerSeen bool `json:"end_marker_seen"`
	// Type overrides the file type detected from the path.
	Type FileType `json:"type,omitempty"`
	// OriginalUnread says a file is being replaced that was too large to
	// read: nothing is compared with it, but emptying it still warns.
	OriginalUnread bool `json:"original_unread,omitempty"`
}

// issue is a finding plus the key that identifies it independently of
// where it is, so the same problem is recognised in the original file.
type issue struct {
	Finding
	key string
}

// typeNames are the file type names used in messages.
var typeNames = map[FileType]string{
	TypeJSON: "JSON", TypeJSONC: "JSON", TypeJSONLines: "JSON Lines", TypeYAML: "YAML", TypeTOML: "TOML",
	TypeXML: "XML", TypeGo: "Go", TypeJavaScript: "JavaScript", TypeJSX: "JSX", TypeTypeScript: "TypeScript",
	TypeTSX: "TSX", TypeCSS: "CSS", TypeShell: "shell", TypeMarkdown: "Markdown", TypeText: "text",
}

// Check checks the (repaired) content to be written to path: its syntax,
// signs that it was cut off, and lazy placeholders. original is the file
// being replaced; when hasOriginal is set, every finding the original has
// too is marked Preexisting, so an already broken file can still be edited.
// Check does no I/O and never panics on any input.
func Check(path string, content, original []byte, hasOriginal bool, opts CheckOptions) Report {
	typ := opts.Type
	if typ == "" {
		typ = Detect(path, content)
	}
	src := bytes.TrimPrefix(content, bom)
	r := Report{FileType: typ, SyntaxOK: true}
	if c, ok := checkers[typ]; ok {
		r.Checker = c.name
	}

	// Each text's line index is built once, for every check that reads
	// its lines: a 64 KiB file's is a pass over it and 8 KB.
	ls := newLines(src)
	issues, syntaxOK := analyze(typ, path, ls)
	r.SyntaxOK = syntaxOK
	var old []issue
	var origSrc []byte
	var origLines *lines
	if hasOriginal {
		origSrc = bytes.TrimPrefix(original, bom)
		origLines = newLines(origSrc)
		old, _ = analyze(typ, path, origLines)
	}
	markPreexisting(issues, old)
	issues = append(issues, placeholders(typ, ls, origLines)...)

	if len(bytes.TrimSpace(src)) == 0 && (len(bytes.TrimSpace(origSrc)) > 0 || opts.OriginalUnread) {
		issues = append(issues, issue{Finding: Finding{
			Code: CodeEmptyContent, Category: CategoryTruncationHint, Severity: SeverityWarning,
			Message: "the content is empty but the existing file is not: writing it would delete the whole file; send the file's full content",
		}})
	}
	if !opts.EndMarkerSeen {
		n := ls.lastNonBlank()
		msg := "the stream ended without the end marker, so the content may be incomplete"
		if n > 0 {
			msg += fmt.Sprintf("; it ends at line %d with %s: if the file is not finished, continue from there", n, quoteLine(ls.text(n)))
		}
		issues = append(issues, issue{Finding: Finding{
			Code: CodeNoEndMarker, Category: CategoryEndMarker, Severity: SeverityWarning, Message: msg,
		}})
	}

	sort.SliceStable(issues, func(i, j int) bool {
		a, b := issues[i], issues[j]
		if a.Preexisting != b.Preexisting {
			return !a.Preexisting
		}
		if (a.Line == 0) != (b.Line == 0) {
			return a.Line != 0 // findings about the whole content last
		}
		return a.Line < b.Line
	})
	r.Findings = make([]Finding, 0, len(issues))
	for _, is := range issues {
		r.Findings = append(r.Findings, is.Finding)
		if is.Category == CategoryTruncation && !is.Preexisting {
			r.Truncated = true
		}
	}
	return r
}

// analyze runs the checks that depend on the content alone (ls's text):
// syntax and the structural signs of a cut.
func analyze(typ FileType, path string, ls *lines) (issues []issue, syntaxOK bool) {
	syntaxOK = true
	src := ls.src
	var tree parsed
	if c, ok := checkers[typ]; ok {
		var ps []problem
		ps, tree = runChecker(c, src, path)
		for _, p := range ps {
			syntaxOK = false
			issues = append(issues, problemIssue(typ, ls, p))
		}
	}
	if typ == TypeMarkdown {
		issues = append(issues, markdownIssues(src, ls)...)
	}
	// One sign of a cut at the end is enough: the hints only run when the
	// parser and the Markdown scanner found nothing.
	if syntaxOK && len(issues) == 0 {
		issues = append(issues, safeHints(typ, path, src, ls, tree)...)
	}
	return issues, syntaxOK
}

// safeHints runs codeEndIssues, which reads what the syntax check parsed
// (tree) and may call other parsers; a panic in one only costs the hints.
func safeHints(typ FileType, path string, src []byte, ls *lines, tree parsed) (is []issue) {
	defer func() {
		if recover() != nil {
			is = nil
		}
	}()
	return codeEndIssues(typ, path, src, ls, tree)
}

// runChecker calls a checker, turning a panic in a parser into a problem:
// a parser bug must never take the daemon down.
func runChecker(c syntaxChecker, src []byte, path string) (ps []problem, tree parsed) {
	defer func() {
		if v := recover(); v != nil {
			ps = problem{off: 0, msg: fmt.Sprintf("the %s parser failed on this content (%v)", c.name, v)}.one()
			tree = nil
		}
	}()
	if c.parse != nil {
		return c.parse(src, path)
	}
	return c.check(src, path), nil
}

// problemIssue turns a parser problem into a finding.
func problemIssue(typ FileType, ls *lines, p problem) issue {
	line, col := p.line, 0
	if p.off >= 0 {
		line, col = ls.position(p.off)
	} else if p.col > 0 {
		line, col = ls.position(ls.offset(p.line, p.col))
	}
	name := typeNames[typ]
	f := Finding{Line: line, Column: col, Snippet: snippet(ls.text(line)), Severity: SeverityError}
	where := fmt.Sprintf("line %d", line)
	if col > 0 {
		where += fmt.Sprintf(", column %d", col)
	}
	if p.eof {
		f.Code, f.Category = CodeTruncated, CategoryTruncation
		last := ls.lastNonBlank()
		f.Message = fmt.Sprintf("the %s ends before it is complete (%s: %s); it looks cut off", name, where, p.msg)
		if last > 0 {
			f.Message += fmt.Sprintf(" after line %d, %s: send the rest of the file from there", last, quoteLine(ls.text(last)))
		}
	} else {
		f.Code, f.Category = CodeSyntaxError, CategoryCodeSyntax
		if typ.Class() == ClassData {
			f.Category = CategoryDataSyntax
		}
		f.Message = fmt.Sprintf("%s syntax error at %s: %s", name, where, p.msg)
	}
	return issue{Finding: f, key: issueKey(f.Code, p.msg, f.Snippet)}
}

// issueKey identifies a problem by its code, message and line text, with
// digits dropped from the message since line numbers move when lines are
// added above.
func issueKey(c Code, msg, line string) string {
	msg = strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return -1
		}
		return r
	}, msg)
	return string(c) + "\x00" + msg + "\x00" + strings.TrimSpace(line)
}

// markPreexisting marks each new issue that the original has too. Issues
// are matched as a multiset: one old issue excuses one new one.
func markPreexisting(issues, old []issue) {
	count := make(map[string]int, len(old))
	for _, o := range old {
		count[o.key]++
	}
	for i := range issues {
		if count[issues[i].key] > 0 {
			count[issues[i].key]--
			issues[i].Preexisting = true
			issues[i].Severity = SeverityInfo
			issues[i].Message += " (the existing file has the same problem)"
		}
	}
}
