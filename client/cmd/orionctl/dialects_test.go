package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A model's reply in its agent's edit format, prose around the edit, is
// streamed through `orionctl write --op edit` into the real daemon, once per
// dialect, then resent: the resend must be reported as already applied.

// writeEdit streams reply as an edit of target and returns the summary.
func writeEdit(t *testing.T, d *testdaemon.Daemon, reply, target string, args ...string) protocol.FinalizeResult {
	t.Helper()
	code, out, errOut := orionctl(t, d.Socket, reply, append(append([]string{"write", "--op", "edit", "--json"}, args...), target)...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	var res protocol.FinalizeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not a finalize result: %v\n%s", err, out)
	}
	return res
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func checkFiles(t *testing.T, root string, want map[string]string) {
	t.Helper()
	for p, w := range want {
		got, err := os.ReadFile(filepath.Join(root, p))
		switch {
		case w == "" && err == nil:
			t.Errorf("%s still exists: %q", p, got)
		case w == "" && os.IsNotExist(err):
		case err != nil:
			t.Errorf("%s: %v", p, err)
		case string(got) != w:
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
}

func TestEditDialectCodex(t *testing.T) {
	d := testdaemon.Start(t)
	writeFiles(t, d.Root, map[string]string{
		"src/app.py":   "import sys\n\n\ndef greet(name):\n    print(\"Hi\", name)\n",
		"src/old.py":   "OLD = 1\n",
		"src/notes.md": "stale notes\n",
	})
	reply := "I'll rename the greeting, add a helper and drop the old module.\n\n" +
		" *** Begin Patch\n" +
		"*** Update File: src/app.py\n" +
		"@@ def greet(name):\n" +
		"-    print(\"Hi\", name)\n" +
		"+    print(\"Hello,\", name)\n" +
		"  *** Add File: src/notes.md\n" +
		"+# Notes\n" +
		"*** Delete File: src/old.py\n" +
		" *** End Patch\n\n" +
		"The notes file is replaced, and undo restores it.\n"
	res := writeEdit(t, d, reply, filepath.Join(d.Root, "src/app.py"), "--workspace-root", d.Root)
	if res.Edit == nil || res.Edit.Dialect != "codex_apply_patch" || res.Edit.AlreadyApplied || len(res.Files) != 3 {
		t.Fatalf("summary: %+v edit %+v", res, res.Edit)
	}
	checkFiles(t, d.Root, map[string]string{
		"src/app.py":   "import sys\n\n\ndef greet(name):\n    print(\"Hello,\", name)\n",
		"src/notes.md": "# Notes\n",
		"src/old.py":   "",
	})

	// Codex fails a Delete File of a file that is not there; nothing of
	// the envelope is written.
	code, _, errOut := orionctl(t, d.Socket, " *** Begin Patch\n*** Add File: src/x.py\n+X = 1\n*** Delete File: src/old.py\n*** End Patch\n",
		"write", "--op", "edit", "--workspace-root", d.Root, filepath.Join(d.Root, "src/app.py"))
	if code == 0 || !strings.Contains(errOut, "nothing to delete") {
		t.Fatalf("delete of a missing file: exit %d: %s", code, errOut)
	}
	checkFiles(t, d.Root, map[string]string{"src/x.py": ""})

	// Undo restores the file Add File replaced.
	if code, out, errOut := orionctl(t, d.Socket, "", "undo", res.SessionID); code != 0 {
		t.Fatalf("undo: exit %d: %s%s", code, out, errOut)
	}
	checkFiles(t, d.Root, map[string]string{"src/notes.md": "stale notes\n", "src/old.py": "OLD = 1\n"})
}

func TestEditDialectAider(t *testing.T) {
	d := testdaemon.Start(t)
	writeFiles(t, d.Root, map[string]string{
		"mathweb/app.py": "from flask import Flask\n\n\ndef get_factorial(n):\n    return str(factorial(n))\n",
		"main.py":        "def hello():\n    print(\"hello\")\n\n\nhello()\n",
	})
	reply := "To use math.factorial we need to change `mathweb/app.py`, and hello() moves to its own file.\n\n" +
		"mathweb/app.py\n```python\n<<<<<<< SEARCH\nfrom flask import Flask\n=======\nimport math\nfrom flask import Flask\n>>>>>>> REPLACE\n```\n\n" +
		"```python\nmathweb/app.py\n<<<<<<< SEARCH\n    return str(factorial(n))\n=======\n    return str(math.factorial(n))\n>>>>>>> REPLACE\n```\n\n" +
		"hello.py\n```python\n<<<<<<< SEARCH\n=======\ndef hello():\n    print(\"hello\")\n>>>>>>> REPLACE\n```\n\n" +
		"main.py\n```python\n<<<<<<< SEARCH\ndef hello():\n    print(\"hello\")\n=======\nfrom hello import hello\n>>>>>>> REPLACE\n```\n\n" +
		"Run the tests afterwards.\n"
	// The model names paths from the workspace; without --workspace-root
	// its path for the target tells where that is.
	res := writeEdit(t, d, reply, filepath.Join(d.Root, "mathweb/app.py"))
	if res.Edit == nil || res.Edit.Dialect != "aider_editblock" || len(res.Files) != 3 {
		t.Fatalf("summary: %+v edit %+v", res, res.Edit)
	}
	checkFiles(t, d.Root, map[string]string{
		"mathweb/app.py": "import math\nfrom flask import Flask\n\n\ndef get_factorial(n):\n    return str(math.factorial(n))\n",
		"hello.py":       "def hello():\n    print(\"hello\")\n",
		"main.py":        "from hello import hello\n\n\nhello()\n",
	})
	again := writeEdit(t, d, reply, filepath.Join(d.Root, "mathweb/app.py"))
	if again.Edit == nil || !again.Edit.AlreadyApplied || again.Edit.Changed || len(again.Files) != 0 {
		t.Fatalf("resend: %+v edit %+v", again, again.Edit)
	}

	// --op edit on a missing target with only empty SEARCH sections
	// creates it; a non-empty SEARCH on a missing file fails.
	created := writeEdit(t, d, "Here is the new module:\n\n```python\n<<<<<<< SEARCH\n=======\nVERSION = 2\n>>>>>>> REPLACE\n```\n", filepath.Join(d.Root, "version.py"))
	if created.Edit == nil || len(created.Files) != 1 || created.Files[0].Kind != "add" {
		t.Fatalf("create: %+v edit %+v", created, created.Edit)
	}
	checkFiles(t, d.Root, map[string]string{"version.py": "VERSION = 2\n"})
	code, _, errOut := orionctl(t, d.Socket, "nope.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n",
		"write", "--op", "edit", filepath.Join(d.Root, "main.py"))
	if code == 0 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("missing file: exit %d: %s", code, errOut)
	}
}

func TestEditDialectCline(t *testing.T) {
	d := testdaemon.Start(t)
	orig := "export function add(items, item) {\r\n  items.push(item);\r\n  return items;\r\n}\r\n"
	writeFiles(t, d.Root, map[string]string{"todo.js": orig})
	target := filepath.Join(d.Root, "todo.js")
	reply := "I'll make add() copy the item.\n\n<replace_in_file>\n<path>todo.js</path>\n<diff>\n" +
		"------- SEARCH\n  items.push(item);\n=======\n  items.push({ ...item });\n+++++++ REPLACE\n" +
		"---------- SEARCH\n  return items;\n==========\n  return [...items];\n++++++++++++ REPLACE\n" +
		"</diff>\n</replace_in_file>\n\nCallers now get a new array.\n"
	res := writeEdit(t, d, reply, target)
	if res.Edit == nil || res.Edit.Dialect != "cline_replace_in_file" || !res.Edit.Changed {
		t.Fatalf("summary: %+v edit %+v", res, res.Edit)
	}
	checkFiles(t, d.Root, map[string]string{"todo.js": "export function add(items, item) {\r\n  items.push({ ...item });\r\n  return [...items];\r\n}\r\n"})
	again := writeEdit(t, d, reply, target)
	if again.Edit == nil || !again.Edit.AlreadyApplied || again.Edit.Changed {
		t.Fatalf("resend: %+v edit %+v", again, again.Edit)
	}

	// A reply cut before the final REPLACE marker is refused as cut.
	code, _, errOut := orionctl(t, d.Socket, "------- SEARCH\n  return [...items];\n=======\n  return items;\n", "write", "--op", "edit", target)
	if code == 0 || !strings.Contains(errOut, "may be cut") {
		t.Fatalf("cut reply: exit %d: %s", code, errOut)
	}
}

func TestEditDialectsCreateParents(t *testing.T) {
	d := testdaemon.Start(t)
	writeFiles(t, d.Root, map[string]string{"main.py": "x = 1\n"})
	writeEdit(t, d, "*** Begin Patch\n*** Add File: pkg/deep/new.py\n+Y = 1\n*** Update File: main.py\n*** Move to: moved/main.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n",
		filepath.Join(d.Root, "main.py"), "--workspace-root", d.Root)
	writeEdit(t, d, "lib/util/helpers.py\n```python\n<<<<<<< SEARCH\n=======\nZ = 1\n>>>>>>> REPLACE\n```\n",
		filepath.Join(d.Root, "moved/main.py"), "--workspace-root", d.Root)
	checkFiles(t, d.Root, map[string]string{"pkg/deep/new.py": "Y = 1\n", "moved/main.py": "x = 2\n", "main.py": "", "lib/util/helpers.py": "Z = 1\n"})
}
