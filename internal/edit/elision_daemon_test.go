package edit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestBlockElisionsThroughDaemon sends edits whose blocks leave lines out
// to the real oriond, as an agent's reply piped to orionctl: merged ones
// are written and counted in elisions_merged, the rest refused with the
// file untouched.
func TestBlockElisionsThroughDaemon(t *testing.T) {
	d := testdaemon.Start(t)
	ctl := testdaemon.Orionctl(t)
	write := func(t *testing.T, name, content, reply string) (protocol.FinalizeResult, string, error) {
		t.Helper()
		target := filepath.Join(d.Root, name)
		if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(ctl, "--socket", d.Socket, "write", "--op", "edit", "--json", target)
		cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_CONFIG=/dev/null")
		cmd.Stdin = strings.NewReader(reply)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var res protocol.FinalizeResult
		if err == nil {
			if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
				t.Fatalf("--json output is not a finalize result: %v\n%s", jerr, out.String())
			}
		}
		return res, out.String() + errOut.String(), err
	}
	check := func(t *testing.T, name, want string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(d.Root, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%s:\n%s\nwant:\n%s", name, got, want)
		}
	}
	addBody := "func (c *Cart) Add(item string) {\n\tif item == \"\" {\n\t\treturn\n\t}\n\tc.items = append(c.items, item)\n}\n"

	t.Run("AiderReplacePlaceholder", func(t *testing.T) {
		reply := "Trimming items as they are added:\n\ncart.go\n```go\n<<<<<<< SEARCH\n" + addBody +
			"=======\nfunc (c *Cart) Add(item string) {\n\t// ... existing code ...\n\t}\n\tc.items = append(c.items, strings.TrimSpace(item))\n}\n>>>>>>> REPLACE\n```\n"
		res, out, err := write(t, "cart.go", shop, reply)
		if err != nil || res.ElisionsMerged != 1 || res.Edit == nil || res.Edit.Blocks[0].ElisionsMerged != 1 {
			t.Fatalf("err %v, want elisions_merged 1 overall and in the block: %s", err, out)
		}
		check(t, "cart.go", strings.Replace(shop, "append(c.items, item)", "append(c.items, strings.TrimSpace(item))", 1))
	})
	t.Run("AiderDots", func(t *testing.T) {
		reply := "cart.go\n```go\n<<<<<<< SEARCH\ntype Cart struct {\n\titems []string\n}\n...\n\treturn fmt.Sprint(c.items)\n=======\n" +
			"type Cart struct {\n\titems []string\n\towner string\n}\n...\n\treturn fmt.Sprint(c.owner, c.items)\n>>>>>>> REPLACE\n```\n"
		res, out, err := write(t, "cart.go", shop, reply)
		if err != nil || res.ElisionsMerged != 1 {
			t.Fatalf("err %v, want elisions_merged 1: %s", err, out)
		}
		check(t, "cart.go", strings.Replace(strings.Replace(shop, "\titems []string\n", "\titems []string\n\towner string\n", 1), "Sprint(c.items)", "Sprint(c.owner, c.items)", 1))
	})
	t.Run("ClineReplacePlaceholder", func(t *testing.T) {
		reply := "<replace_in_file>\n<path>cart.go</path>\n<diff>\n------- SEARCH\n" + addBody +
			"=======\nfunc (c *Cart) Add(item string) {\n\tlog.Print(item)\n\t// ... existing code ...\n}\n+++++++ REPLACE\n</diff>\n</replace_in_file>\n"
		res, out, err := write(t, "cart.go", shop, reply)
		if err != nil || res.ElisionsMerged != 1 || res.Edit == nil || res.Edit.Dialect != "cline_replace_in_file" {
			t.Fatalf("err %v, want a Cline edit with elisions_merged 1: %s", err, out)
		}
		check(t, "cart.go", strings.Replace(shop, "Add(item string) {\n", "Add(item string) {\n\tlog.Print(item)\n", 1))
	})
	t.Run("TwoFilesInOneReply", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(d.Root, "notes.py"), []byte(stub), 0o644); err != nil {
			t.Fatal(err)
		}
		reply := "cart.go\n```go\n<<<<<<< SEARCH\n" + addBody +
			"=======\nfunc (c *Cart) Add(item string) {\n\tlog.Print(item)\n\t// ... existing code ...\n}\n>>>>>>> REPLACE\n```\n\n" +
			"notes.py\n```python\n<<<<<<< SEARCH\nclass Base:\n    def run(self):\n        ...\n\n    def stop(self):\n=======\n" +
			"class Base:\n    # ... existing code ...\n\n    def stop(self):\n        self.stopped = True\n>>>>>>> REPLACE\n```\n"
		res, out, err := write(t, "cart.go", shop, reply)
		if err != nil || res.ElisionsMerged != 2 || len(res.Files) != 2 {
			t.Fatalf("err %v, want both files written and elisions_merged 2: %s", err, out)
		}
		check(t, "cart.go", strings.Replace(shop, "Add(item string) {\n", "Add(item string) {\n\tlog.Print(item)\n", 1))
		check(t, "notes.py", strings.Replace(stub, "    def stop(self):\n", "    def stop(self):\n        self.stopped = True\n", 1))
	})
	t.Run("AmbiguousPlaceholderRefused", func(t *testing.T) {
		reply := "cart.go\n```go\n<<<<<<< SEARCH\n" + addBody +
			"=======\nfunc (c *Cart) Add(item string) {\n\t// ... existing code ...\n\t\tlog.Print(item)\n\t}\n\t// ... existing code ...\n}\n>>>>>>> REPLACE\n```\n"
		_, out, err := write(t, "cart.go", shop, reply)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(out, "lazy_placeholder") || !strings.Contains(out, "was not merged") {
			t.Fatalf("err %v, want a refused lazy placeholder saying why it was not merged: %s", err, out)
		}
		check(t, "cart.go", shop)
	})
	t.Run("UnpairedDotsRefused", func(t *testing.T) {
		reply := "cart.go\n```go\n<<<<<<< SEARCH\nimport \"fmt\"\n...\n\treturn fmt.Sprint(c.items)\n=======\nimport \"fmt\"\n\treturn fmt.Sprintf(\"%v\", c.items)\n>>>>>>> REPLACE\n```\n"
		_, out, err := write(t, "cart.go", shop, reply)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(out, "edit_failed") || !strings.Contains(out, `line(s) and the REPLACE part 0`) {
			t.Fatalf("err %v, want edit_failed naming the unpaired \"...\": %s", err, out)
		}
		check(t, "cart.go", shop)
	})
}
