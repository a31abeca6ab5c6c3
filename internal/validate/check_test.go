package validate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

// marked is the options of a stream that ended with its end marker.
var marked = validate.CheckOptions{EndMarkerSeen: true}

// validFiles reads testdata/valid: one real-looking file per checked type.
func validFiles(t *testing.T) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata/valid", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func TestValidFilesPassUntouched(t *testing.T) {
	for name, content := range validFiles(t) {
		t.Run(name, func(t *testing.T) {
			if got := validate.Detect(name, content); got == validate.TypeText {
				t.Fatalf("Detect(%q) = text, want a checked type", name)
			}
			for _, hasOrig := range []bool{false, true} {
				out, fixes, err := validate.Repair(name, content, content, hasOrig, validate.RepairOptions{EndMarker: "__END__", AllowLegacyDone: true})
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != string(content) || len(fixes) != 0 {
					t.Fatalf("Repair(hasOriginal=%v) changed a valid file: %+v", hasOrig, fixes)
				}
			}
			r := validate.Check(name, content, nil, false, marked)
			if !r.SyntaxOK || r.Truncated || len(r.Findings) != 0 {
				t.Fatalf("Check found problems in a valid file: %+v", r)
			}
		})
	}
}

// TestTruncatedValidFilesAreCaught cuts each valid file of the types
// whose parsers see cuts (not YAML, shell or Markdown, where a cut in a
// value, a command or a paragraph often leaves a valid file: those are
// measured by the corpus command) at every byte inside a word and checks
// the cut is reported.
func TestTruncatedValidFilesAreCaught(t *testing.T) {
	for name, content := range validFiles(t) {
		switch validate.Detect(name, content) {
		case validate.TypeYAML, validate.TypeShell, validate.TypeMarkdown:
			continue
		}
		t.Run(name, func(t *testing.T) {
			caught, cuts := 0, 0
			for i := 1; i < len(content)-1; i++ {
				if content[i-1] == '\n' || content[i] == '\n' || content[i-1] == ' ' {
					continue // cuts at word or line boundaries can leave valid files
				}
				cuts++
				r := validate.Check(name, content[:i], nil, false, validate.CheckOptions{})
				for _, f := range r.Findings {
					if f.Code != validate.CodeNoEndMarker {
						caught++
						break
					}
				}
			}
			if cuts == 0 || float64(caught) < 0.75*float64(cuts) {
				t.Fatalf("caught %d of %d mid-word truncations", caught, cuts)
			}
		})
	}
}

func TestBrokenFilesFailWithPosition(t *testing.T) {
	tests := []struct {
		name, path, content string
		code                validate.Code
		line, col           int
		msgHas              string
	}{
		{"JSONMissingComma", "a.json", "{\n  \"a\": 1\n  \"b\": 2\n}\n", validate.CodeSyntaxError, 3, 3, "expected ',' or '}'"},
		{"JSONTrailingComma", "a.json", "[1, 2,]\n", validate.CodeSyntaxError, 1, 7, "expected a value"},
		{"JSONTruncated", "a.json", "{\n  \"a\": [1, 2", validate.CodeTruncated, 2, 13, "array opened at line 2, column 8"},
		{"JSONCComment", "tsconfig.json", "{\n  // ok\n  \"a\": 1,,\n}\n", validate.CodeSyntaxError, 3, 10, ""},
		{"JSONLines", "a.jsonl", "{\"a\":1}\n{\"b\":}\n", validate.CodeSyntaxError, 2, 6, ""},
		{"YAMLBadIndent", "a.yaml", "a:\n  b: 1\n c: 2\nd: 3\n", validate.CodeSyntaxError, 2, 3, "did not find expected key"},
		{"YAMLUnclosedFlow", "a.yml", "a: [1, 2\nb: 3\nc: 4\n", validate.CodeTruncated, 1, 1, "did not find expected ',' or ']'"},
		{"YAMLTab", "a.yaml", "a:\n\tb: 1\n", validate.CodeSyntaxError, 2, 2, "tabs"},
		{"TOMLBadValue", "a.toml", "a = 1\nb = tru\nc = 2\n", validate.CodeSyntaxError, 2, 5, "true"},
		{"TOMLDuplicate", "a.toml", "a = 1\na = 2\n", validate.CodeSyntaxError, 2, 1, "already defined"},
		{"TOMLUnterminated", "a.toml", "a = \"x", validate.CodeTruncated, 1, 6, "unterminated"},
		{"XMLMismatch", "a.xml", "<a>\n  <b></c>\n</a>\n", validate.CodeSyntaxError, 2, 6, "closed by"},
		{"XMLTruncated", "a.svg", "<svg>\n  <g>\n", validate.CodeTruncated, 3, 1, "not closed"},
		{"XMLTwoRoots", "a.xml", "<a/>\n<b/>\n", validate.CodeSyntaxError, 2, 1, "second root"},
		{"XMLEntity", "a.xml", "<a>\n x &copyx; y\n</a>\n", validate.CodeSyntaxError, 2, 4, "&copyx;"},
		{"GoMissingParen", "a.go", "package a\n\nfunc f() {\n\tx := g(1\n\ty := 2\n}\n", validate.CodeSyntaxError, 4, 10, "missing ',' before newline"},
		{"GoTruncated", "a.go", "package a\n\nfunc f() {\n\treturn\n", validate.CodeTruncated, 5, 1, "expected '}', found 'EOF'"},
		{"JSUnexpected", "a.js", "const a = {\n  b: 1,\n  c 2\n};\n", validate.CodeSyntaxError, 3, 5, "Expected"},
		{"JSTruncated", "a.js", "function f() {\n  return 1\n", validate.CodeTruncated, 3, 1, "end of file"},
		{"JSXUnclosed", "a.jsx", "const a = <div>\n  <span>x</span>\n</p>;\n", validate.CodeSyntaxError, 3, 3, "Unexpected closing \"p\" tag"},
		{"TSBadType", "a.ts", "let x: = 1;\n", validate.CodeSyntaxError, 1, 8, "Unexpected \"=\""},
		{"TSXTruncated", "a.tsx", "export const A = () => <div>{1 +", validate.CodeTruncated, 1, 33, "end of file"},
		{"CSSUnclosed", "a.css", "a { color: red;\n\nb { color: blue; }\n", validate.CodeTruncated, 4, 1, "Expected \"}\""},
		{"CSSBadToken", "a.css", "a { color: red; } }\n", validate.CodeSyntaxError, 1, 19, "Unexpected \"}\""},
		{"ShellUnclosedIf", "a.sh", "#!/bin/sh\nif true; then\n  echo x\n", validate.CodeTruncated, 2, 1, "must end with `fi`"},
		{"ShellBadToken", "run", "#!/bin/bash\necho hi )\n", validate.CodeSyntaxError, 2, 9, "encountered `)`"},
		{"MarkdownUnclosedFence", "a.md", "# T\n\n```go\nfunc f() {}\n", validate.CodeUnclosedFence, 3, 1, "expected a closing ``` line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validate.Check(tt.path, []byte(tt.content), nil, false, marked)
			if len(r.Findings) == 0 {
				t.Fatalf("no finding for %q", tt.content)
			}
			f := r.Findings[0]
			if f.Code != tt.code || f.Line != tt.line || f.Column != tt.col {
				t.Fatalf("got %s at %d:%d (%s), want %s at %d:%d", f.Code, f.Line, f.Column, f.Message, tt.code, tt.line, tt.col)
			}
			if !strings.Contains(f.Message, tt.msgHas) {
				t.Fatalf("message %q does not contain %q", f.Message, tt.msgHas)
			}
			if f.Severity != validate.SeverityError {
				t.Fatalf("severity = %s, want error", f.Severity)
			}
			if r.SyntaxOK != (tt.code == validate.CodeUnclosedFence) {
				t.Fatalf("SyntaxOK = %v", r.SyntaxOK)
			}
		})
	}
}
