package elide_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/elide"
	"github.com/orion-agent/orion/internal/validate"
)

// FuzzMerge: a model's text never makes the merge panic, and a merge keeps
// every non-blank line the text wrote, in its order, and every line of the
// file it keeps comes from the file.
func FuzzMerge(f *testing.F) {
	f.Add(goFile, "package shop\n\n// ... existing code ...\n\nfunc (c *Cart) String() string {\n\treturn fmt.Sprintf(\"%v\", c.items)\n}\n")
	f.Add(jsFile, "// ... existing code ...\n  return a - b;\n}\n\nexport function neg(a) {\n  return -a;\n}\n\nexport function mul(a, b) {\n// ... existing code ...\n")
	f.Add(classFile, "class C {\n  // ... existing code ...\n  exp(n) {\n    return this;\n  }\n}\n")
	f.Add(pyFile, "import os\n# ... rest unchanged\n}\n\n// ... existing code ...\n")
	f.Fuzz(func(t *testing.T, orig, text string) {
		el := validate.NewPlaceholderLines("f.js", []byte(text), []byte(orig))
		if len(el) == 0 {
			return
		}
		out, n, err := elide.Merge([]byte(orig), []byte(text), el)
		if err != nil {
			return
		}
		if n != len(el) {
			t.Fatalf("n = %d, want %d", n, len(el))
		}
		skip := map[int]bool{}
		for _, e := range el {
			skip[e] = true
		}
		rest := string(out)
		for i, l := range strings.SplitAfter(text, "\n") {
			if skip[i+1] || strings.TrimSpace(l) == "" {
				continue
			}
			l = strings.TrimSuffix(l, "\n")
			at := strings.Index(rest, l)
			if at < 0 {
				t.Fatalf("line %d of the text, %q, is not in the merge (in order):\n%s", i+1, l, out)
			}
			rest = rest[at+len(l):]
		}
	})
}
