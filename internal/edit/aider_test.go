package edit_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// The cases below follow Aider's edit-format prompts for "diff" and
// "diff-fenced" (the full path alone on the line before the opening fence,
// or first inside it; SEARCH must match the file; an empty SEARCH makes a
// new file; two blocks to move code; several files in one reply) and what
// Aider's parser accepts (5 to 9 marker characters, padded markers, the
// path in backticks, bold or after "#"). The texts are ours.

const calc = `from flask import Flask

app = Flask(__name__)


def factorial(n):
    "compute factorial"

    if n == 0:
        return 1
    else:
        return n * factorial(n - 1)


@app.route("/fact/<int:n>")
def get_factorial(n):
    return str(factorial(n))
`

// block is one Aider block: the path line, the fence, the markers.
func block(path, search, replace string) string {
	return path + "\n```python\n<<<<<<< SEARCH\n" + search + "=======\n" + replace + ">>>>>>> REPLACE\n```\n"
}

// fencedBlock is one diff-fenced block: the path inside the fence.
func fencedBlock(path, search, replace string) string {
	return "```python\n" + path + "\n<<<<<<< SEARCH\n" + search + "=======\n" + replace + ">>>>>>> REPLACE\n```\n"
}

func TestAiderEditBlock(t *testing.T) {
	aider, fenced := edit.DialectAider, edit.DialectAiderFenced
	useMath := replaceAll(calc, "from flask import Flask\n", "import math\nfrom flask import Flask\n")
	runDialectCases(t, []dialectCase{
		{name: "PathBeforeFence", files: map[string]string{"web/app.py": calc}, dialect: aider,
			edit:  "To use the math module:\n\n" + block("web/app.py", "from flask import Flask\n", "import math\nfrom flask import Flask\n") + "\nThat's all.\n",
			after: map[string]string{"web/app.py": useMath}, status: []edit.Status{"applied"}},
		{name: "PathBeforeMarkerWithoutFence", files: map[string]string{"web/app.py": calc}, dialect: aider,
			edit:  "web/app.py\n<<<<<<< SEARCH\nfrom flask import Flask\n=======\nimport math\nfrom flask import Flask\n>>>>>>> REPLACE\n",
			after: map[string]string{"web/app.py": useMath}},
		{name: "DiffFencedPathInsideFence", files: map[string]string{"web/app.py": calc}, dialect: fenced,
			edit:  "Here is the change:\n\n" + fencedBlock("web/app.py", "from flask import Flask\n", "import math\nfrom flask import Flask\n"),
			after: map[string]string{"web/app.py": useMath}},
		{name: "DiffFencedSeveralBlocks", files: map[string]string{"web/app.py": calc}, dialect: fenced,
			edit: fencedBlock("web/app.py", "from flask import Flask\n", "import math\nfrom flask import Flask\n") + "\n" +
				fencedBlock("web/app.py", "    return str(factorial(n))\n", "    return str(math.factorial(n))\n"),
			after: map[string]string{"web/app.py": replaceAll(useMath, "str(factorial(n))", "str(math.factorial(n))")}},
		{name: "PathOnFenceLine", files: map[string]string{"web/app.py": calc},
			edit:  "```web/app.py\n<<<<<<< SEARCH\napp = Flask(__name__)\n=======\napp = Flask(\"calc\")\n>>>>>>> REPLACE\n```\n",
			after: map[string]string{"web/app.py": replaceAll(calc, "Flask(__name__)", "Flask(\"calc\")")}},
		{name: "SeveralFilesInOneReply", files: map[string]string{"main.py": "from util import helper\n\nhelper()\n", "util.py": "def helper():\n    pass\n"},
			edit:   "Two files change.\n\n" + block("util.py", "    pass\n", "    print(\"helping\")\n") + "\n" + block("main.py", "helper()\n", "helper()\nhelper()\n"),
			after:  map[string]string{"util.py": "def helper():\n    print(\"helping\")\n", "main.py": "from util import helper\n\nhelper()\nhelper()\n"},
			status: []edit.Status{"applied", "applied"}},
		{name: "NewFileByEmptySearch", files: map[string]string{},
			edit:  block("hello.py", "", "def hello():\n    print(\"hello\")\n"),
			after: map[string]string{"hello.py": "def hello():\n    print(\"hello\")\n"}},
		{name: "NewFileInNewDirectory", files: map[string]string{},
			edit:  block("pkg/greet/hello.py", "", "X = 1\n"),
			after: map[string]string{"pkg/greet/hello.py": "X = 1\n"}},
		{name: "RefactorIntoNewFile", files: map[string]string{"main.py": "def hello():\n    \"print a greeting\"\n\n    print(\"hello\")\n\n\nhello()\n"},
			edit: "Move hello() into its own file:\n\n" + block("hello.py", "", "def hello():\n    \"print a greeting\"\n\n    print(\"hello\")\n") + "\n" +
				block("main.py", "def hello():\n    \"print a greeting\"\n\n    print(\"hello\")\n", "from hello import hello\n"),
			after: map[string]string{"hello.py": "def hello():\n    \"print a greeting\"\n\n    print(\"hello\")\n", "main.py": "from hello import hello\n\n\nhello()\n"}},
		{name: "ErrNonEmptySearchOnMissingFile", files: map[string]string{"main.py": "x = 1\n"},
			edit:   block("main.py", "x = 1\n", "x = 2\n") + block("missing.py", "y = 1\n", "y = 2\n"),
			status: []edit.Status{"applied", "conflict"}, err: edit.ErrConflict, msg: []string{"missing.py", "does not exist", "not empty"}},
		{name: "StickyPathForNextBlock", files: map[string]string{"web/app.py": calc},
			edit: block("web/app.py", "from flask import Flask\n", "import math\nfrom flask import Flask\n") +
				"\n```python\n<<<<<<< SEARCH\n    return str(factorial(n))\n=======\n    return str(math.factorial(n))\n>>>>>>> REPLACE\n```\n",
			after: map[string]string{"web/app.py": replaceAll(useMath, "str(factorial(n))", "str(math.factorial(n))")}},
		{name: "NoPathEditsTheTarget", files: map[string]string{"app.py": calc}, dialect: aider,
			edit:  "<<<<<<< SEARCH\napp = Flask(__name__)\n=======\napp = Flask(\"calc\")\n>>>>>>> REPLACE\n",
			after: map[string]string{"app.py": replaceAll(calc, "Flask(__name__)", "Flask(\"calc\")")}},
		{name: "PathDecorations", files: map[string]string{"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n", "d_e.py": "d = 1\n"},
			edit:  block("`a.py`", "a = 1\n", "a = 2\n") + block("**b.py**", "b = 1\n", "b = 2\n") + block("# c.py:", "c = 1\n", "c = 2\n") + block(`d\_e.py`, "d = 1\n", "d = 2\n"),
			after: map[string]string{"a.py": "a = 2\n", "b.py": "b = 2\n", "c.py": "c = 2\n", "d_e.py": "d = 2\n"}},
		{name: "ProseLineIsNotAPath", files: map[string]string{"app.py": "v = 1\n"},
			edit:  "Here is the fix for the bug:\n```python\n<<<<<<< SEARCH\nv = 1\n=======\nv = 2\n>>>>>>> REPLACE\n```\n",
			after: map[string]string{"app.py": "v = 2\n"}},
		{name: "MarkerLengths", files: map[string]string{"app.py": "a\nb\nc\n"},
			edit: "<<<<< SEARCH\na\n=====\nA\n>>>>> REPLACE\n" + "<<<<<<<<< SEARCH\nb\n=========\nB\n>>>>>>>>> REPLACE\n" +
				"<<<<<<<<<<<< SEARCH\nc\n==========\nC\n>>>>>>>>>>> REPLACE\n",
			after: map[string]string{"app.py": "A\nB\nC\n"}, status: []edit.Status{"applied", "applied", "applied"}},
		{name: "PaddedMarkers", files: map[string]string{"app.py": "a\n"},
			edit:  "  <<<<<<< SEARCH  \na\n =======\nA\n>>>>>>> REPLACE \t\n",
			after: map[string]string{"app.py": "A\n"}},
		{name: "SearchMarkerWithAngle", files: map[string]string{"app.py": "a\n"},
			edit:  "<<<<<<< SEARCH>\na\n=======\nA\n>>>>>>> REPLACE\n",
			after: map[string]string{"app.py": "A\n"}},
		{name: "TrailingWhitespaceTolerated", files: map[string]string{"app.py": "x = 1   \ny = 2\n"},
			edit:  block("app.py", "x = 1\n", "x = 3\n"),
			after: map[string]string{"app.py": "x = 3\ny = 2\n"}},
		{name: "LeadingWhitespaceReindented", files: map[string]string{"app.py": calc},
			edit:  block("app.py", "if n == 0:\n    return 1\n", "if n <= 1:\n    return 1\n"),
			after: map[string]string{"app.py": replaceAll(calc, "if n == 0:", "if n <= 1:")}},
		{name: "SpuriousLeadingBlankLine", files: map[string]string{"app.py": "a\nb\nc\n"},
			edit:  block("app.py", "\nb\nc\n", "\nB\nc\n"),
			after: map[string]string{"app.py": "a\nB\nc\n"}},
		{name: "MoveCodeWithTwoBlocks", files: map[string]string{"app.py": "def a():\n    pass\n\n\ndef b():\n    pass\n"},
			edit:  block("app.py", "def a():\n    pass\n\n\n", "") + block("app.py", "def b():\n    pass\n", "def b():\n    pass\n\n\ndef a():\n    pass\n"),
			after: map[string]string{"app.py": "def b():\n    pass\n\n\ndef a():\n    pass\n"}},
		{name: "DeleteLines", files: map[string]string{"app.py": calc},
			edit:  block("app.py", "    \"compute factorial\"\n\n", ""),
			after: map[string]string{"app.py": replaceAll(calc, "    \"compute factorial\"\n\n", "")}},
		{name: "ResentReplyIsAlreadyApplied", files: map[string]string{"web/app.py": useMath, "hello.py": "X = 1\n"},
			edit:   block("web/app.py", "from flask import Flask\n", "import math\nfrom flask import Flask\n") + block("hello.py", "", "X = 1\n"),
			status: []edit.Status{"already_applied", "already_applied"}, already: true},
		{name: "PartlyAppliedReplyResent", files: map[string]string{"app.py": "A\nb\n"},
			edit:  block("app.py", "a\n", "A\n") + block("app.py", "b\n", "B\n"),
			after: map[string]string{"app.py": "A\nB\n"}, status: []edit.Status{"already_applied", "applied"}},
		{name: "CRLFFile", files: map[string]string{"app.py": "a = 1\r\nb = 2\r\n"},
			edit:  block("app.py", "b = 2\n", "b = 3\nc = 4\n"),
			after: map[string]string{"app.py": "a = 1\r\nb = 3\r\nc = 4\r\n"}},
		{name: "NoFinalNewline", files: map[string]string{"app.py": "a\nlast"},
			edit:  block("app.py", "last\n", "LAST\n"),
			after: map[string]string{"app.py": "a\nLAST"}},
		{name: "EmptySearchFillsEmptyFile", files: map[string]string{"app.py": ""},
			edit:  block("app.py", "", "print(1)\n"),
			after: map[string]string{"app.py": "print(1)\n"}},
		{name: "ShellBlockIgnored", files: map[string]string{"app.py": "v = 1\n"},
			edit:  block("app.py", "v = 1\n", "v = 2\n") + "\nThen run:\n\n```bash\npython app.py\n```\n",
			after: map[string]string{"app.py": "v = 2\n"}},
		{name: "ErrEmptySearchOnFileWithContent", files: map[string]string{"app.py": "v = 1\n"},
			edit:   block("app.py", "", "w = 2\n"),
			status: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"SEARCH section is empty"}},
		{name: "ErrSearchNotInFile", files: map[string]string{"app.py": calc},
			edit:   block("app.py", "def factorial(x):\n", "def fact(x):\n"),
			status: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"closest lines", "def factorial(n):"}},
		{name: "ErrSearchMatchesTwice", files: map[string]string{"app.py": "x = 0\nx = 0\n"},
			edit:   block("app.py", "x = 0\n", "x = 1\n"),
			status: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous, msg: []string{"lines 1, 2"}},
		{name: "ErrCutBeforeReplaceMarker", files: map[string]string{"app.py": "a\n"},
			edit: "app.py\n```python\n<<<<<<< SEARCH\na\n=======\nA\n",
			err:  edit.ErrSyntax, msg: []string{">>>>>>> REPLACE", "may be cut"}},
		{name: "ErrCutBeforeDivider", files: map[string]string{"app.py": "a\n"},
			edit: "app.py\n<<<<<<< SEARCH\na\n", err: edit.ErrSyntax, msg: []string{"may be cut"}},
		{name: "IndentedSearchMarkerIsTheFilesText", files: map[string]string{"fixture.py": "EDIT = \"\"\"\n    <<<<<<< SEARCH\n    old\n\"\"\"\n"}, dialect: aider,
			edit:  block("fixture.py", "    <<<<<<< SEARCH\n    old\n", "    <<<<<<< SEARCH\n    new\n"),
			after: map[string]string{"fixture.py": "EDIT = \"\"\"\n    <<<<<<< SEARCH\n    new\n\"\"\"\n"}},
		{name: "ErrUnindentedSearchMarkerInsideBlock", files: map[string]string{"app.py": "a\nb\n"},
			edit: "<<<<<<< SEARCH\na\n<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n",
			err:  edit.ErrSyntax, msg: []string{"new SEARCH marker inside the block"}},
		{name: "ErrStrayDivider", files: map[string]string{"app.py": "a\n"},
			edit: "=======\nA\n>>>>>>> REPLACE\n", err: edit.ErrSyntax, msg: []string{"outside a block"}},
	})
}

// A reply whose first block names no file (the target) and whose next
// names the target by its path edits that file once, not twice.
func TestAiderTargetNamedTwoWays(t *testing.T) {
	tree := map[string]string{"/w/app.py": "a = 1\nb = 1\n", "/w/lib.py": "c = 1\n"}
	read := func(p string) ([]byte, bool, error) {
		if p[0] != '/' {
			p = "/w/" + p
		}
		s, ok := tree[p]
		return []byte(s), ok, nil
	}
	same := func(a, b string) bool {
		abs := func(p string) string {
			if p[0] != '/' {
				return "/w/" + p
			}
			return p
		}
		return abs(a) == abs(b)
	}
	reply := "<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n" + block("app.py", "b = 1\n", "b = 2\n") + block("lib.py", "c = 1\n", "c = 2\n")
	res, err := edit.ApplyFiles([]byte(reply), "/w/app.py", read, same)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || res.Files[0].Path != "/w/app.py" || string(res.Files[0].Content) != "a = 2\nb = 2\n" || res.Files[1].Path != "lib.py" {
		t.Fatalf("files %+v", res.Files)
	}
}
