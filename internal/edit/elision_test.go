package edit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

const shop = `package shop

import "fmt"

type Cart struct {
	items []string
}

func (c *Cart) Add(item string) {
	if item == "" {
		return
	}
	c.items = append(c.items, item)
}

func (c *Cart) String() string {
	return fmt.Sprint(c.items)
}
`

const stub = `class Base:
    def run(self):
        ...

    def stop(self):
        return 0
`

// TestBlockElisions: a block that leaves lines out, in its REPLACE part
// with a placeholder or in both parts with Aider's "..." lines, is merged
// where every anchor matches once and fails or stays refusable elsewhere.
func TestBlockElisions(t *testing.T) {
	aider := func(search, replace string) string {
		return "cart.go\n```go\n<<<<<<< SEARCH\n" + search + "=======\n" + replace + ">>>>>>> REPLACE\n```\n"
	}
	cline := func(search, replace string) string {
		return "------- SEARCH\n" + search + "=======\n" + replace + "+++++++ REPLACE\n"
	}
	for _, c := range []struct {
		name, file, target, edit string
		want                     string // "" when the edit must fail
		merged                   int
		msg                      string // in the block's message
	}{
		{
			name: "ReplacePlaceholderAider", file: shop,
			edit: aider("func (c *Cart) Add(item string) {\n\tif item == \"\" {\n\t\treturn\n\t}\n\tc.items = append(c.items, item)\n}\n",
				"func (c *Cart) Add(item string) {\n\t// ... existing code ...\n\t}\n\tc.items = append(c.items, strings.TrimSpace(item))\n}\n"),
			want:   strings.Replace(shop, "append(c.items, item)", "append(c.items, strings.TrimSpace(item))", 1),
			merged: 1,
		},
		{
			name: "ReplacePlaceholderCline", file: shop,
			edit: cline("func (c *Cart) Add(item string) {\n\tif item == \"\" {\n\t\treturn\n\t}\n\tc.items = append(c.items, item)\n}\n",
				"func (c *Cart) Add(item string) {\n\tlog.Print(item)\n\t// ... existing code ...\n}\n"),
			want:   strings.Replace(shop, "func (c *Cart) Add(item string) {\n", "func (c *Cart) Add(item string) {\n\tlog.Print(item)\n", 1),
			merged: 1,
		},
		{
			// The placeholder after the new line stands for lines that
			// start after a "}" it writes, and "}" alone places nothing.
			name: "ReplacePlaceholderAmbiguous", file: shop,
			edit: aider("func (c *Cart) Add(item string) {\n\tif item == \"\" {\n\t\treturn\n\t}\n\tc.items = append(c.items, item)\n}\n",
				"func (c *Cart) Add(item string) {\n\t// ... existing code ...\n\t\tlog.Print(item)\n\t}\n\t// ... existing code ...\n}\n"),
			want:   strings.Replace(shop, "\tif item == \"\" {\n\t\treturn\n\t}\n\tc.items = append(c.items, item)\n", "\t// ... existing code ...\n\t\tlog.Print(item)\n\t}\n\t// ... existing code ...\n", 1),
			merged: 0, msg: "was not merged",
		},
		{
			name: "AiderDots", file: shop,
			edit:   aider("import \"fmt\"\n...\n\treturn fmt.Sprint(c.items)\n", "import \"fmt\"\n...\n\treturn fmt.Sprintf(\"%v\", c.items)\n"),
			want:   strings.Replace(shop, "fmt.Sprint(c.items)", "fmt.Sprintf(\"%v\", c.items)", 1),
			merged: 1,
		},
		{
			name: "AiderDotsTwoPieces", file: shop,
			edit: aider("type Cart struct {\n\titems []string\n}\n...\n\treturn fmt.Sprint(c.items)\n",
				"type Cart struct {\n\titems []string\n\towner string\n}\n...\n\treturn fmt.Sprint(c.owner, c.items)\n"),
			want:   strings.Replace(strings.Replace(shop, "\titems []string\n", "\titems []string\n\towner string\n", 1), "Sprint(c.items)", "Sprint(c.owner, c.items)", 1),
			merged: 1,
		},
		{
			name: "AiderDotsUnpaired", file: shop,
			edit: aider("import \"fmt\"\n...\n\treturn fmt.Sprint(c.items)\n", "import \"fmt\"\n\treturn fmt.Sprintf(\"%v\", c.items)\n"),
			msg:  "\"...\" line(s)",
		},
		{
			// A piece that matches twice fails as any ambiguous block.
			name: "AiderDotsAmbiguousPiece", file: shop,
			edit: aider("import \"fmt\"\n...\n}\n", "import \"fmt\"\n...\n}\n// end\n"),
			msg:  "part 2",
		},
		{
			// "..." in REPLACE alone is a statement in Python: unpaired,
			// as Aider says.
			name: "PythonDotsInReplaceOnly", file: stub, target: "base.py",
			edit: "base.py\n```python\n<<<<<<< SEARCH\n    def stop(self):\n        return 0\n=======\n    def stop(self):\n        ...\n        return 1\n>>>>>>> REPLACE\n```\n",
			msg:  "the REPLACE part 1",
		},
		{
			// In Go a bare "..." is a placeholder, filled from the region.
			name: "GoDotsInReplaceOnly", file: shop,
			edit: aider("func (c *Cart) Add(item string) {\n\tif item == \"\" {\n\t\treturn\n\t}\n\tc.items = append(c.items, item)\n}\n",
				"func (c *Cart) Add(item string) {\n\tlog.Print(item)\n\t...\n}\n"),
			want:   strings.Replace(shop, "Add(item string) {\n", "Add(item string) {\n\tlog.Print(item)\n", 1),
			merged: 1,
		},
		{
			// "..." that the file has (a Python stub's body) is code.
			name: "DotsInFile", file: stub,
			edit: aider("    def run(self):\n        ...\n", "    def run(self):\n        return 1\n"),
			want: strings.Replace(stub, "        ...\n", "        return 1\n", 1),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := c.target
			if target == "" {
				target = "cart.go"
			}
			res, err := edit.ApplyFile(target, []byte(c.file), []byte(c.edit))
			if c.want == "" {
				var ee *edit.Error
				if err == nil || !errors.As(err, &ee) {
					t.Fatalf("err = %v, want a failed block", err)
				}
			} else {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if got := string(res.Content); got != c.want {
					t.Fatalf("content:\n%s\nwant:\n%s", got, c.want)
				}
			}
			if res.ElisionsMerged != c.merged || len(res.Blocks) == 1 && res.Blocks[0].ElisionsMerged != c.merged {
				t.Errorf("elisions merged = %d (block %d), want %d", res.ElisionsMerged, res.Blocks[0].ElisionsMerged, c.merged)
			}
			if c.msg != "" && !strings.Contains(res.Blocks[0].Message, c.msg) {
				t.Errorf("message %q, want it to contain %q", res.Blocks[0].Message, c.msg)
			}
		})
	}
}
