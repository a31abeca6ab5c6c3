// Command errtable writes the error table of docs/protocol.md from
// protocol.ErrorReasons
// and checks that every Reason constant of package protocol is in it.
//
//	go generate ./protocol
//
// runs it (the go:generate line is in protocol/reasons.go). It fails, and
// names them, when protocol declares reasons the table does not document:
// add each to protocol.ErrorReasons with its code and a line saying what it
// means, then run it again.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/orion-agent/orion/protocol"
)

// The document's error table sits between these lines.
const (
	beginMarker = "<!-- errors:begin (generated from protocol.ErrorReasons by `go generate ./protocol`; do not edit) -->"
	endMarker   = "<!-- errors:end -->"
)

// Its method table sits between these.
const (
	methodsBegin = "<!-- methods:begin (generated from protocol.MethodSpecs by `go generate ./protocol`; do not edit) -->"
	methodsEnd   = "<!-- methods:end -->"
)

func main() {
	doc := flag.String("doc", "../docs/protocol.md", "the document whose error table to rewrite")
	dir := flag.String("protocol", ".", "the directory of package protocol, checked for undocumented reasons")
	flag.Parse()
	if err := run(*doc, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "errtable:", err)
		os.Exit(1)
	}
}

func run(doc, dir string) error {
	missing, err := undocumented(dir, protocol.ErrorReasons)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return missingError(missing)
	}
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	updated, err := rewrite(old, table(protocol.ErrorReasons))
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	updated, err = rewriteBetween(updated, methodsBegin, methodsEnd, methodTable(protocol.MethodSpecs))
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	if bytes.Equal(old, updated) {
		return nil
	}
	return os.WriteFile(doc, updated, 0o644)
}

func missingError(missing []string) error {
	return fmt.Errorf("protocol declares reasons that protocol.ErrorReasons (protocol/reasons.go) does not document: %s; "+
		"add each with its code and what it means, then run go generate ./protocol", strings.Join(missing, ", "))
}

// table is the markdown table of reasons, in the order of docs: one row
// per reason.
func table(docs []protocol.ReasonDoc) string {
	var b strings.Builder
	b.WriteString("| code | reason | what it means |\n|---|---|---|\n")
	for _, d := range docs {
		fmt.Fprintf(&b, "| %d | `%s` | %s |\n", d.Code, d.Reason, d.Doc)
	}
	return b.String()
}

// methodTable is the markdown table of methods, one row per method in the
// order daemon.status lists them.
func methodTable(specs []protocol.MethodSpec) string {
	var b strings.Builder
	b.WriteString("| method | params → result |\n|---|---|\n")
	for _, m := range specs {
		fmt.Fprintf(&b, "| `%s` | %s |\n", m.Name, m.Doc)
	}
	return b.String()
}

// rewrite replaces what lies between the error table's markers of doc with
// table.
func rewrite(doc []byte, table string) ([]byte, error) {
	return rewriteBetween(doc, beginMarker, endMarker, table)
}

// rewriteBetween replaces what lies between the begin and end marker lines
// of doc with table.
func rewriteBetween(doc []byte, begin, end, table string) ([]byte, error) {
	s := string(doc)
	i := strings.Index(s, begin+"\n")
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %q ... %q lines to put the table between", begin, end)
	}
	start := i + len(begin) + 1
	return []byte(s[:start] + table + s[j:]), nil
}

// undocumented parses the non-test Go files of dir and returns the
// constants named Reason... with a string value that docs lacks, as
// "Name (value)".
func undocumented(dir string, docs []protocol.ReasonDoc) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, d := range docs {
		known[d.Reason] = true
	}
	var missing []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, dir+"/"+name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Reason") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					if !known[v] {
						missing = append(missing, fmt.Sprintf("%s (%q)", id.Name, v))
					}
				}
			}
		}
	}
	slices.Sort(missing)
	return missing, nil
}
