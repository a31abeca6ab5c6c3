package main

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// Files in each form a checkout holds are edited through the real daemon
// by a model that writes LF and no byte order mark: the edited line takes
// the file's form, every other byte stays as it was.
func TestEditKeepsBytes(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	d := testdaemon.Start(t)
	cases := []struct{ name, before, after string }{
		{"bom.py", bom + "import os\nx = 1\n", bom + "import sys\nx = 1\n"},
		{"bomcrlf.py", bom + "import os\r\nx = 1\r\n", bom + "import sys\r\nx = 1\r\n"},
		{"crlf.py", "import os\r\nx = 1\r\n", "import sys\r\nx = 1\r\n"},
		{"mixed.py", "import os\nx = 1\r\ny = 2\n", "import sys\nx = 1\r\ny = 2\n"},
		{"nofinal.py", "import os\nx = 1", "import sys\nx = 1"},
		{"latin1.py", "import os\n# caf\xe9\n", "import sys\n# caf\xe9\n"},
	}
	for _, c := range cases {
		writeFiles(t, d.Root, map[string]string{c.name: c.before})
	}
	for i, format := range []string{
		"<<<<<<< SEARCH\nimport os\n=======\nimport sys\n>>>>>>> REPLACE\n",
		"------- SEARCH\nimport os\n=======\nimport sys\n+++++++ REPLACE\n",
	} {
		for _, c := range cases {
			if i == 1 {
				writeFiles(t, d.Root, map[string]string{c.name: c.before})
			}
			res := writeEdit(t, d, format, filepath.Join(d.Root, c.name), "--workspace-root", d.Root)
			if res.Edit == nil || res.Edit.AlreadyApplied {
				t.Errorf("%s: edit result %+v", c.name, res.Edit)
			}
			checkFiles(t, d.Root, map[string]string{c.name: c.after})
		}
	}
}

// A UTF-16 file is edited as its text and written back in UTF-16; one
// whose bytes would not survive the round trip is refused, unchanged.
func TestEditUTF16(t *testing.T) {
	d := testdaemon.Start(t)
	le := func(s string) string {
		b := []byte{0xff, 0xfe}
		for _, r := range utf16.Encode([]rune(s)) {
			b = append(b, byte(r), byte(r>>8))
		}
		return string(b)
	}
	writeFiles(t, d.Root, map[string]string{"w.txt": le("Grüße\r\nx = 1\r\n")})
	res := writeEdit(t, d, "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n", filepath.Join(d.Root, "w.txt"), "--workspace-root", d.Root)
	if res.Edit == nil || res.Edit.AlreadyApplied {
		t.Errorf("edit result %+v", res.Edit)
	}
	checkFiles(t, d.Root, map[string]string{"w.txt": le("Grüße\r\nx = 2\r\n")})

	bad := le("a\n") + "\x00\xd8" + le("b\n")[2:]
	writeFiles(t, d.Root, map[string]string{"bad.txt": bad})
	code, out, errOut := orionctl(t, d.Socket, "<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n", "write", "--op", "edit", "--json", "--workspace-root", d.Root, filepath.Join(d.Root, "bad.txt"))
	if code == 0 || !strings.Contains(out+errOut, "unsupported_encoding") {
		t.Errorf("exit %d, want a refusal naming unsupported_encoding: %s%s", code, out, errOut)
	}
	checkFiles(t, d.Root, map[string]string{"bad.txt": bad})
}

// A new file takes the form the project's .editorconfig and
// .gitattributes name, reported as repairs.
func TestNewFileFollowsProjectConventions(t *testing.T) {
	d := testdaemon.Start(t)
	writeFiles(t, d.Root, map[string]string{
		".editorconfig":     "root = true\n[*]\nend_of_line = lf\ninsert_final_newline = true\n[*.ps1]\nend_of_line = crlf\ncharset = utf-8-bom\n[legacy/*.txt]\ncharset = latin1\n",
		".gitattributes":    "*.bat eol=crlf\n*.bin -text\n",
		"sub/.editorconfig": "[*.md]\ninsert_final_newline = false\n",
	})
	cases := []struct{ name, in, want string }{
		{"a.py", "x = 1", "x = 1\n"},
		{"run.ps1", "Write-Host hi\nexit 0\n", "\xef\xbb\xbfWrite-Host hi\r\nexit 0\r\n"},
		{"run.bat", "echo hi\n", "echo hi\r\n"},
		{"sub/notes.md", "# Notes\n", "# Notes"},
		{"legacy/caf.txt", "café\n", "caf\xe9\n"},
	}
	for _, c := range cases {
		code, out, errOut := orionctl(t, d.Socket, c.in, "write", "--json", "--workspace-root", d.Root, filepath.Join(d.Root, c.name))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s%s", c.name, code, out, errOut)
		}
		if c.name != "a.py" && !strings.Contains(out, "matched") {
			t.Errorf("%s: no repair reported: %s", c.name, out)
		}
		checkFiles(t, d.Root, map[string]string{c.name: c.want})
	}
	// Latin-1 cannot hold a euro sign: refused, nothing written.
	code, out, errOut := orionctl(t, d.Socket, "5 €\n", "write", "--json", "--workspace-root", d.Root, filepath.Join(d.Root, "legacy/price.txt"))
	if code == 0 || !strings.Contains(out+errOut, "unsupported_encoding") {
		t.Errorf("exit %d, want unsupported_encoding: %s%s", code, out, errOut)
	}
	checkFiles(t, d.Root, map[string]string{"legacy/price.txt": ""})
}

// A whole-file write that left out unchanged code is merged into the file
// where the lines around each elision place it once; elsewhere it is
// refused as a lazy placeholder, naming the candidate lines.
func TestOverwriteElided(t *testing.T) {
	d := testdaemon.Start(t)
	orig := "import os\r\nimport sys\r\n\r\n\r\ndef main():\r\n    print(os.getcwd())\r\n\r\n\r\ndef other():\r\n    return 1\r\n"
	writeFiles(t, d.Root, map[string]string{"app.py": orig})
	code, out, errOut := orionctl(t, d.Socket, "import os\nimport sys\nimport json\n# ... rest of the code unchanged ...\n", "write", "--op", "overwrite", "--json", filepath.Join(d.Root, "app.py"))
	if code != 0 || !strings.Contains(out, `"elisions_merged": 1`) {
		t.Fatalf("exit %d, want elisions_merged 1: %s%s", code, out, errOut)
	}
	checkFiles(t, d.Root, map[string]string{"app.py": strings.Replace(orig, "import sys\r\n", "import sys\r\nimport json\r\n", 1)})

	before := "def a():\n    return 1\n\n\ndef b():\n    return 1\n"
	writeFiles(t, d.Root, map[string]string{"amb.py": before})
	code, out, errOut = orionctl(t, d.Socket, "# ... existing code ...\n    return 1\n# ... existing code ...\n", "write", "--op", "overwrite", "--json", filepath.Join(d.Root, "amb.py"))
	if code == 0 || !strings.Contains(out+errOut, "lines 2, 6") {
		t.Errorf("exit %d, want a refusal naming lines 2 and 6: %s%s", code, out, errOut)
	}
	checkFiles(t, d.Root, map[string]string{"amb.py": before})
}
