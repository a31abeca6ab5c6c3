package validate_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

// placeholderHost wraps a placeholder line in a small file of a type whose
// comment syntax it uses.
func placeholderHost(line string) (path, content string) {
	l := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(l, "#"):
		return "a.sh", "echo start\n" + line + "\necho end\n"
	case strings.HasPrefix(l, "<!--"):
		return "a.xml", "<root>\n" + line + "\n</root>\n"
	default:
		return "a.ts", "function f() {\n  start();\n  " + line + "\n  end();\n}\n"
	}
}

func TestPlaceholderTableExamplesAreFlagged(t *testing.T) {
	for _, rule := range validate.PlaceholderRules() {
		for _, ex := range rule.Examples {
			t.Run(rule.Name+"/"+ex, func(t *testing.T) {
				path, content := placeholderHost(ex)
				r := validate.Check(path, []byte(content), nil, false, marked)
				if !r.Has(validate.CodeLazyPlaceholder) {
					t.Fatalf("%q in %s not flagged: %+v", ex, path, r.Findings)
				}
			})
		}
	}
}

func TestPlaceholderIsReportedWithPosition(t *testing.T) {
	r := validate.Check("a.go", []byte("package a\n\nfunc f() {\n\t// ... rest of code unchanged\n}\n"), nil, false, marked)
	if len(r.Findings) != 1 {
		t.Fatalf("findings = %+v", r.Findings)
	}
	f := r.Findings[0]
	if f.Code != validate.CodeLazyPlaceholder || f.Line != 4 || f.Column != 2 || f.Category != validate.CategoryPlaceholder {
		t.Fatalf("got %+v, want lazy_placeholder at 4:2", f)
	}
	if !strings.Contains(f.Message, "replace the line") {
		t.Fatalf("message %q should say what to do", f.Message)
	}
}

func TestRealCommentsAreNotPlaceholders(t *testing.T) {
	for _, line := range []string{
		"// Keep existing entries when n is 0.",
		"// The rest of the buffer is left unchanged when the write fails, so callers can retry.",
		"// Other methods.",
		"// Loading...",
		"// TODO: implement caching",
		"# Same as above, but for the staging cluster and its replicas.",
		"/* Copyright 2024 The Authors. */",
		"// Decode the same file.",
		"// same as File",
		"/** protocol used. ie. 'https:' or 'http:' etc... */",
		"// ── forEachChild helpers (same signature as forEachChildTable entries) ──",
		"/* Main text width before: 70% ≙ 35em ≙ 75…95 chrs */",
	} {
		t.Run(line, func(t *testing.T) {
			path, content := placeholderHost(line)
			if r := validate.Check(path, []byte(content), nil, false, marked); r.Has(validate.CodeLazyPlaceholder) {
				t.Fatalf("%q flagged as a placeholder", line)
			}
		})
	}
}

func TestCommentBlocksAreDocumentation(t *testing.T) {
	for name, src := range map[string]string{
		"EllipsisInExample":  "package a\n\n// Use it like this:\n//\n//\tfor {\n//\t\t...\n//\t}\nfunc F() {}\n",
		"RestOfTheCodeProse": "package a\n\n// Check validates the bundle so that it can be\n// processed safely by the\n// rest of the code.\nfunc Check() {}\n",
		"InsideBlockComment": "/*\nPackage a does this:\n\n\t...\n*/\npackage a\n",
	} {
		t.Run(name, func(t *testing.T) {
			if r := validate.Check("a.go", []byte(src), nil, false, marked); r.Has(validate.CodeLazyPlaceholder) {
				t.Fatalf("documentation flagged: %+v", r.Findings)
			}
		})
	}
}

func TestPlaceholdersComparedWithOriginal(t *testing.T) {
	orig := "function f() {\n  // ... existing code ...\n  a();\n}\n"
	tests := []struct {
		name, content string
		newCount      int
		oldCount      int
	}{
		{"AlreadyInOriginal", "function f() {\n  // ... existing code ...\n  b();\n}\n", 0, 1},
		{"OneMoreThanOriginal", "function f() {\n  // ... existing code ...\n  b();\n  // ... existing code ...\n}\n", 1, 1},
		{"DifferentPlaceholder", "function f() {\n  // rest of the function unchanged\n}\n", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validate.Check("a.js", []byte(tt.content), []byte(orig), true, marked)
			n, o := 0, 0
			for _, f := range r.Findings {
				if f.Code != validate.CodeLazyPlaceholder {
					continue
				}
				if f.Preexisting {
					o++
				} else {
					n++
				}
			}
			if n != tt.newCount || o != tt.oldCount {
				t.Fatalf("new %d old %d, want %d %d: %+v", n, o, tt.newCount, tt.oldCount, r.Findings)
			}
			if d := validate.Decide(r, validate.Policies{}); d.Blocked != (tt.newCount > 0) {
				t.Fatalf("default policy blocked = %v", d.Blocked)
			}
		})
	}
}

func TestPlaceholderInMarkdownCodeBlockIsContent(t *testing.T) {
	src := "# Guide\n\n```js\n// ... rest of code unchanged\n```\n\n<!-- ... -->\n"
	r := validate.Check("a.md", []byte(src), nil, false, marked)
	if got := codes(r); len(got) != 1 || r.Findings[0].Line != 7 {
		t.Fatalf("findings = %+v, want only the HTML comment at line 7", r.Findings)
	}
}
