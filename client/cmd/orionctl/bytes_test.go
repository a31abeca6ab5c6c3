package main

import (
	"path/filepath"
	"testing"

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
