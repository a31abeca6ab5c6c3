package trace_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// Every event is recorded with one of protocol's TraceType constants, never
// a string literal, so protocol.TraceTypes (and the Node package's copy,
// generated from it) names every type a client may meet.
func TestEventTypesAreDeclared(t *testing.T) {
	root := "../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isEventType(lit.Type) {
				return true
			}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Type" {
					if _, isLit := kv.Value.(*ast.BasicLit); isLit {
						t.Errorf("%s: a trace event typed by a literal; declare it in protocol/trace.go (TraceTypes)", fset.Position(kv.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[protocol.TraceType]bool{}
	for _, ty := range protocol.TraceTypes {
		if seen[ty] || ty == "" {
			t.Errorf("TraceTypes holds %q twice or empty", ty)
		}
		seen[ty] = true
	}
}

func isEventType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Event" || x.Name == "TraceEvent"
	case *ast.SelectorExpr:
		return x.Sel.Name == "Event" || x.Sel.Name == "TraceEvent"
	}
	return false
}
