package validate

import (
	"bytes"
	"errors"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
	"mvdan.cc/sh/v3/syntax"
)

// parseGo parses src as a Go source file and returns its syntax tree
// (*ast.File) when it has no errors.
func parseGo(src []byte, path string) ([]problem, parsed) {
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err == nil {
		return nil, f
	}
	return goProblems(src, err), nil
}

func goProblems(src []byte, err error) []problem {
	var list scanner.ErrorList
	if !errors.As(err, &list) {
		return problem{off: 0, msg: err.Error()}.one()
	}
	end := contentEnd(src)
	last := newLines(src).lastNonBlank()
	var ps []problem
	for _, e := range list {
		p := problem{off: e.Pos.Offset, msg: e.Msg}
		p.eof = p.off >= end || strings.Contains(e.Msg, "EOF") ||
			// These run to the end of the input by definition.
			e.Msg == "comment not terminated" || e.Msg == "raw string literal not terminated" ||
			strings.HasSuffix(e.Msg, "not terminated") && e.Pos.Line >= last
		ps = append(ps, p)
		if len(ps) == maxProblems {
			break
		}
	}
	return ps
}

// esbuildLoaders maps file types to esbuild loaders.
var esbuildLoaders = map[FileType]api.Loader{
	TypeJavaScript: api.LoaderJS,
	TypeJSX:        api.LoaderJSX,
	TypeTypeScript: api.LoaderTS,
	TypeTSX:        api.LoaderTSX,
	TypeCSS:        api.LoaderCSS,
}

// checkESBuild returns a checker that runs esbuild's Transform with the
// loader for t and reads its errors. For CSS, esbuild recovers from syntax
// errors the way browsers do and reports them as warnings with the ID
// css-syntax-error; those count as errors here, since the rule it drops is
// lost. JavaScript that fails as plain JS is tried again as JSX, since many
// projects keep JSX in .js files.
func checkESBuild(t FileType) func(src []byte, path string) []problem {
	parse := parseESBuild(t)
	return func(src []byte, path string) []problem {
		ps, _ := parse(src, path)
		return ps
	}
}

// parseESBuild is checkESBuild that also returns esbuild's output (a
// string) for content without errors, which the hints read.
func parseESBuild(t FileType) func(src []byte, path string) ([]problem, parsed) {
	return func(src []byte, path string) ([]problem, parsed) {
		res := esbuildTransform(src, path, esbuildLoaders[t])
		ps := esbuildResultProblems(src, res, esbuildLoaders[t])
		if len(ps) > 0 && t == TypeJavaScript {
			jsx := esbuildTransform(src, path, api.LoaderJSX)
			if len(esbuildResultProblems(src, jsx, api.LoaderJSX)) == 0 {
				return nil, esbuildCode(jsx)
			}
		}
		if len(ps) > 0 {
			return ps, nil
		}
		return nil, esbuildCode(res)
	}
}

// esbuildCode is the output of a transform without errors, or "".
func esbuildCode(res api.TransformResult) string {
	if len(res.Errors) > 0 {
		return ""
	}
	return string(res.Code)
}

func esbuildTransform(src []byte, path string, loader api.Loader) api.TransformResult {
	return api.Transform(string(src), api.TransformOptions{
		Loader:     loader,
		Sourcefile: path,
		LogLevel:   api.LogLevelSilent,
	})
}

func esbuildResultProblems(src []byte, res api.TransformResult, loader api.Loader) []problem {
	msgs := res.Errors
	if loader == api.LoaderCSS {
		for _, w := range res.Warnings {
			if w.ID == "css-syntax-error" {
				msgs = append(msgs, w)
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	ls := newLines(src)
	end := contentEnd(src)
	last := ls.lastNonBlank()
	var ps []problem
	for _, m := range msgs {
		p := problem{off: 0, msg: m.Text}
		line := 0
		if m.Location != nil {
			line = m.Location.Line
			p.off = ls.offset(line, m.Location.Column+1)
		}
		p.eof = p.off >= end || strings.Contains(m.Text, "end of file") ||
			// A template literal, comment or regexp that is not terminated
			// on the last line ran into the end of the input.
			(strings.HasPrefix(m.Text, "Unterminated") || strings.Contains(m.Text, "to terminate")) && line >= last
		ps = append(ps, p)
		if len(ps) == maxProblems {
			break
		}
	}
	// esbuild reports CSS problems in no particular order.
	if loader == api.LoaderCSS {
		sortProblems(ps)
	}
	return ps
}

// sortProblems orders problems by offset.
func sortProblems(ps []problem) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].off < ps[j-1].off; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// shellVariant picks the parser's dialect from a shebang: Bash unless the
// script says mksh or bats. Scripts that say sh are parsed as Bash too:
// POSIX mode would reject every bashism, which is a portability question,
// not the broken syntax this check is for.
func shellVariant(src []byte, path string) syntax.LangVariant {
	first := src
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	switch {
	case strings.HasSuffix(path, ".mksh"), bytes.HasPrefix(first, []byte("#!")) && bytes.Contains(first, []byte("mksh")):
		return syntax.LangMirBSDKorn
	case strings.HasSuffix(path, ".bats"), bytes.HasPrefix(first, []byte("#!")) && bytes.Contains(first, []byte("bats")):
		return syntax.LangBats
	}
	return syntax.LangBash
}

// checkShell parses src as a shell script.
func checkShell(src []byte, path string) []problem {
	p := syntax.NewParser(syntax.Variant(shellVariant(src, path)))
	_, err := p.Parse(bytes.NewReader(src), path)
	if err == nil {
		return nil
	}
	ls := newLines(src)
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		pr := problem{off: ls.offset(int(pe.Pos.Line()), int(pe.Pos.Col())), msg: pe.Text, eof: pe.Incomplete}
		return pr.one()
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return problem{off: ls.offset(int(le.Pos.Line()), int(le.Pos.Col())), msg: strings.TrimPrefix(le.Error(), le.Filename+":"+le.Pos.String()+": ")}.one()
	}
	return problem{off: 0, msg: err.Error()}.one()
}
