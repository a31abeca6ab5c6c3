package elide_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/elide"
	"github.com/orion-agent/orion/internal/validate"
)

const goFile = `package shop

import "fmt"

type Cart struct {
	items []string
}

func (c *Cart) Add(item string) {
	c.items = append(c.items, item)
}

func (c *Cart) Len() int {
	return len(c.items)
}

func (c *Cart) String() string {
	return fmt.Sprint(c.items)
}
`

const pyFile = `import os
import sys


def load(path):
    with open(path) as f:
        return f.read()


def save(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    print(load(sys.argv[1]))
`

const jsFile = `export function add(a, b) {
  return a + b;
}

export function sub(a, b) {
  return a - b;
}

export function mul(a, b) {
  return a * b;
}
`

const classFile = `class C {
  a() {
    return this;
  }

  b() {
    return 2;
  }
}
`

// Each case is a whole-file text a model wrote with parts left out, and
// the file it must become; want "" means the merge must refuse.
var cases = []struct {
	name, file, orig, text, want string
}{
	{"GoChangeLastFunc", "cart.go", goFile,
		"package shop\n\n// ... existing code ...\n\nfunc (c *Cart) String() string {\n\treturn fmt.Sprintf(\"%v\", c.items)\n}\n",
		strings.Replace(goFile, "fmt.Sprint(c.items)", "fmt.Sprintf(\"%v\", c.items)", 1)},
	{"GoChangeMiddleFunc", "cart.go", goFile,
		"// ... existing code ...\nfunc (c *Cart) Len() int {\n\treturn len(c.items) + 0\n}\n// ... existing code ...\n",
		// "}" after the changed line is in the file three times: it is
		// the first at its indentation after the function's first line.
		strings.Replace(goFile, "return len(c.items)", "return len(c.items) + 0", 1)},
	{"GoAddFuncAtEnd", "cart.go", goFile,
		"// ... existing code ...\n\treturn fmt.Sprint(c.items)\n}\n\nfunc (c *Cart) Reset() {\n\tc.items = nil\n}\n",
		goFile + "\nfunc (c *Cart) Reset() {\n\tc.items = nil\n}\n"},
	{"GoAddField", "cart.go", goFile,
		"// ... existing code ...\ntype Cart struct {\n\titems []string\n\towner string\n}\n// ... rest of the code ...\n",
		// "}" places nothing alone; the struct's lines written out pair
		// with the file's from "type Cart struct {" on.
		strings.Replace(goFile, "\titems []string\n", "\titems []string\n\towner string\n", 1)},
	{"GoAmbiguousBrace", "cart.go", goFile,
		"// ... existing code ...\n}\n\nfunc (c *Cart) Reset() {\n\tc.items = nil\n}\n// ... existing code ...\n", ""},
	{"GoAnchorMissing", "cart.go", goFile,
		"// ... existing code ...\nfunc (c *Cart) Remove(i int) {\n\tc.items = c.items[:i]\n}\n// ... existing code ...\n", ""},
	{"PyChangeMain", "app.py", pyFile,
		"# ... existing code ...\n\n\ndef main():\n    print(load(sys.argv[1]).strip())\n",
		strings.Replace(pyFile, "load(sys.argv[1]))", "load(sys.argv[1]).strip())", 1)},
	{"PyRestUnchanged", "app.py", pyFile,
		"import os\nimport sys\nimport json\n# ... rest unchanged\n",
		strings.Replace(pyFile, "import sys\n", "import sys\nimport json\n", 1)},
	{"PyChangeSave", "app.py", pyFile,
		"# ... existing code ...\ndef save(path, text):\n    with open(path, \"w\", encoding=\"utf-8\") as f:\n        f.write(text)\n# ... existing code ...\n",
		strings.Replace(pyFile, "open(path, \"w\")", "open(path, \"w\", encoding=\"utf-8\")", 1)},
	{"PyAmbiguousWith", "app.py", pyFile,
		"# ... existing code ...\n        return f.read().strip()\n# ... existing code ...\n", ""},
	{"JsChangeSub", "m.js", jsFile,
		"// ... existing code ...\nexport function sub(a, b) {\n  return b - a;\n}\n// ... existing code ...\n",
		strings.Replace(jsFile, "return a - b;", "return b - a;", 1)},
	{"JsAmbiguousReturnOnly", "m.js", jsFile,
		"// ... existing code ...\n  return a / b;\n}\n// ... existing code ...\n", ""},
	{"JsAddBetween", "m.js", jsFile,
		"// ... existing code ...\n  return a - b;\n}\n\nexport function neg(a) {\n  return -a;\n}\n\nexport function mul(a, b) {\n// ... existing code ...\n",
		strings.Replace(jsFile, "  return a - b;\n}\n\n", "  return a - b;\n}\n\nexport function neg(a) {\n  return -a;\n}\n\n", 1)},
	// A method rewritten without its class's indentation: its lines are
	// changed ones, not new ones, and must not be read as an insertion
	// before the class's closing brace.
	{"JsMethodUnindented", "c.js", "class C {\n  a() {\n    return 1;\n  }\n\n  b() {\n    return 2;\n  }\n}\n",
		"// ... existing code ...\nb() {\n  return 3;\n}\n// ... existing code ...\n", ""},
	// A method added at the end of a class: its "return this;" and "}"
	// are its own, not the file's lines that look the same.
	{"JsNewMethodAtClassEnd", "c.js", classFile,
		"class C {\n  // ... existing code ...\n  exp(n) {\n    this.x = n;\n    return this;\n  }\n}\n",
		strings.Replace(classFile, "  }\n}\n", "  }\n  exp(n) {\n    this.x = n;\n    return this;\n  }\n}\n", 1)},
	// A method added at the start whose last lines equal an existing
	// method's: read by its last lines it would replace a()'s header.
	{"JsNewMethodSameEnding", "c.js", classFile,
		"class C {\n  first() {\n    return this;\n  }\n  // ... existing code ...\n}\n", ""},
	{"JsChangedSignature", "c.js", classFile,
		"class C {\n  a(x) {\n    return this;\n  }\n  // ... existing code ...\n}\n",
		strings.Replace(classFile, "  a() {", "  a(x) {", 1)},
	// The text drops lines between ones it keeps, with no placeholder
	// there (an insertion written as if the rest were kept).
	{"GoUnmarkedGap", "cart.go", goFile,
		"// ... existing code ...\nfunc (c *Cart) Add(item string) {\n\tc.items = append(c.items, item)\n}\n\nfunc (c *Cart) Reset() {\n\tc.items = nil\n}\n\nfunc (c *Cart) String() string {\n\treturn fmt.Sprint(c.items)\n}\n", ""},
	{"JsOutOfOrder", "m.js", jsFile,
		"export function mul(a, b) {\n// ... existing code ...\nexport function add(a, b) {\n  return a + b + 0;\n}\n", ""},
}

func TestMergeCorpus(t *testing.T) {
	wrong, merged, refused := 0, 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			el := validate.NewPlaceholderLines(c.file, []byte(c.text), []byte(c.orig))
			if len(el) == 0 {
				t.Fatalf("no elision found in %q", c.text)
			}
			got, n, err := elide.Merge([]byte(c.orig), []byte(c.text), el)
			switch {
			case c.want == "" && err == nil:
				wrong++
				t.Errorf("merged, want refused:\n%s", got)
			case c.want == "" && err != nil:
				refused++
				var ae *elide.AmbiguousError
				var de *elide.DroppedError
				if !errors.As(err, &ae) && !errors.As(err, &de) {
					t.Errorf("err = %v, want an AmbiguousError or a DroppedError", err)
				}
			case err != nil:
				refused++
				t.Errorf("refused: %v", err)
			case string(got) != c.want:
				wrong++
				t.Errorf("merged wrong:\n%s\nwant:\n%s", got, c.want)
			default:
				merged++
				if n != len(el) {
					t.Errorf("n = %d, want %d", n, len(el))
				}
			}
		})
	}
	t.Logf("%d cases: %d merged as expected, %d refused, %d wrong", len(cases), merged, refused, wrong)
}
