package edit_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// The cases below follow Codex's apply_patch tool instructions point by
// point (the grammar, "@@" context lines, Add/Delete/Update/Move to, "***
// End of File", relative paths) and what Codex does with them (padded
// envelope lines, an Add or a Move over an existing file, a Delete of a
// missing one). The texts are ours.

const greet = `import sys


def greet(name):
    print("Hi", name)


def main():
    greet(sys.argv[1])
`

const shapes = `class Square:
    def area(self):
        return self.side * self.side

    def name(self):
        return "square"


class Circle:
    def area(self):
        return 3.14 * self.r * self.r

    def name(self):
        return "circle"
`

func TestCodexApplyPatch(t *testing.T) {
	codex := edit.DialectCodex
	runDialectCases(t, []dialectCase{
		{name: "AddFile", files: map[string]string{}, dialect: codex,
			edit:  "*** Begin Patch\n*** Add File: hello.txt\n+Hello world\n*** End Patch\n",
			after: map[string]string{"hello.txt": "Hello world\n"}, status: []edit.Status{"applied"}},
		{name: "AddFileSeveralLines", files: map[string]string{},
			edit:  "*** Begin Patch\n*** Add File: notes.md\n+# Notes\n+\n+- one\n+- two\n*** End Patch\n",
			after: map[string]string{"notes.md": "# Notes\n\n- one\n- two\n"}},
		{name: "AddFileNestedPath", files: map[string]string{},
			edit:  "*** Begin Patch\n*** Add File: pkg/sub/new.go\n+package sub\n*** End Patch\n",
			after: map[string]string{"pkg/sub/new.go": "package sub\n"}},
		{name: "AddFileOverExistingReplacesIt", files: map[string]string{"hello.txt": "old\n"},
			edit:  "*** Begin Patch\n*** Add File: hello.txt\n+new\n*** End Patch\n",
			after: map[string]string{"hello.txt": "new\n"}, replaced: []string{"hello.txt"}},
		{name: "AddFileResentIsAlreadyApplied", files: map[string]string{"hello.txt": "Hello world\n"},
			edit:   "*** Begin Patch\n*** Add File: hello.txt\n+Hello world\n*** End Patch\n",
			status: []edit.Status{"already_applied"}, already: true},
		{name: "DeleteFile", files: map[string]string{"obsolete.txt": "x\n"},
			edit:  "*** Begin Patch\n*** Delete File: obsolete.txt\n*** End Patch\n",
			after: map[string]string{"obsolete.txt": gone}},
		{name: "ErrDeleteMissingFile", files: map[string]string{"a.txt": "a\n"},
			edit:   "*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch\n",
			status: []edit.Status{"conflict"}, err: edit.ErrConflict, msg: []string{"missing.txt", "nothing to delete"}},
		{name: "UpdateWithFunctionContext", files: map[string]string{"app.py": greet},
			edit: "*** Begin Patch\n*** Update File: app.py\n@@ def greet(name):\n-    print(\"Hi\", name)\n+    print(\"Hello,\", name)\n*** End Patch\n",
			after: map[string]string{"app.py": `import sys


def greet(name):
    print("Hello,", name)


def main():
    greet(sys.argv[1])
`}},
		{name: "UpdateFirstChunkWithoutAtAt", files: map[string]string{"app.py": greet},
			edit:  "*** Begin Patch\n*** Update File: app.py\n import sys\n+import os\n*** End Patch\n",
			after: map[string]string{"app.py": "import sys\nimport os\n" + greet[len("import sys\n"):]}},
		{name: "UpdateThreeLinesOfContext", files: map[string]string{"app.py": greet},
			edit:  "*** Begin Patch\n*** Update File: app.py\n@@\n \n \n def main():\n-    greet(sys.argv[1])\n+    for n in sys.argv[1:]:\n+        greet(n)\n*** End Patch\n",
			after: map[string]string{"app.py": greet[:len(greet)-len("    greet(sys.argv[1])\n")] + "    for n in sys.argv[1:]:\n        greet(n)\n"}},
		{name: "TwoChunksInOrder", files: map[string]string{"shapes.py": shapes},
			edit:   "*** Begin Patch\n*** Update File: shapes.py\n@@ class Square:\n     def name(self):\n-        return \"square\"\n+        return \"Square\"\n@@ class Circle:\n     def name(self):\n-        return \"circle\"\n+        return \"Circle\"\n*** End Patch\n",
			after:  map[string]string{"shapes.py": replaceAll(shapes, `"square"`, `"Square"`, `"circle"`, `"Circle"`)},
			status: []edit.Status{"applied", "applied"}},
		{name: "TwoAtAtLinesJumpToTheMethod", files: map[string]string{"shapes.py": shapes},
			edit:  "*** Begin Patch\n*** Update File: shapes.py\n@@ class Circle:\n@@     def area(self):\n-        return 3.14 * self.r * self.r\n+        return math.pi * self.r ** 2\n*** End Patch\n",
			after: map[string]string{"shapes.py": replaceAll(shapes, "3.14 * self.r * self.r", "math.pi * self.r ** 2")}},
		{name: "ErrAmbiguousWithoutContextLine", files: map[string]string{"shapes.py": shapes},
			edit:   "*** Begin Patch\n*** Update File: shapes.py\n@@\n     def area(self):\n+        \"\"\"The area.\"\"\"\n*** End Patch\n",
			status: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous, msg: []string{"add an \"@@\" line"}},
		{name: "MoveWithChange", files: map[string]string{"src/app.py": greet},
			edit:  "*** Begin Patch\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet(name):\n-    print(\"Hi\", name)\n+    print(\"Hello, world!\")\n*** End Patch\n",
			after: map[string]string{"src/app.py": gone, "src/main.py": replaceAll(greet, `print("Hi", name)`, `print("Hello, world!")`)}},
		{name: "MoveOntoExistingFileReplacesIt", files: map[string]string{"a.txt": "one\n", "b.txt": "old b\n"},
			edit:  "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-one\n+two\n*** End Patch\n",
			after: map[string]string{"a.txt": gone, "b.txt": "two\n"}, replaced: []string{"b.txt"}},
		{name: "MoveResentIsAlreadyApplied", files: map[string]string{"b.txt": "two\n"},
			edit:   "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-one\n+two\n*** End Patch\n",
			status: []edit.Status{"already_applied"}, already: true},
		{name: "PaddedBeginAndEnd", files: map[string]string{"f.txt": "one\n"},
			edit:  " *** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\n*** End Patch \n",
			after: map[string]string{"f.txt": "two\n"}},
		{name: "PaddedEndAfterChunkIsNotContext", files: map[string]string{"f.txt": "one\n"},
			edit:  "*** Begin Patch \n*** Update File: f.txt\n@@\n-one\n+two\n *** End Patch\n",
			after: map[string]string{"f.txt": "two\n"}},
		{name: "PaddedFileHeaders", files: map[string]string{"f.txt": "one\n", "g.txt": "x\n"},
			edit:  "*** Begin Patch\n  *** Update File: f.txt\n@@\n-one\n+two\n  *** Delete File: g.txt\n\t*** Add File: h.txt\n+h\n*** End Patch\n",
			after: map[string]string{"f.txt": "two\n", "g.txt": gone, "h.txt": "h\n"}},
		{name: "EndOfFileChunk", files: map[string]string{"t.txt": "end\nmiddle\nend\n"},
			edit:  "*** Begin Patch\n*** Update File: t.txt\n@@\n middle\n-end\n+END\n*** End of File\n*** End Patch\n",
			after: map[string]string{"t.txt": "end\nmiddle\nEND\n"}},
		{name: "PureAdditionAppendsAtEnd", files: map[string]string{"t.txt": "a\nb\n"},
			edit:  "*** Begin Patch\n*** Update File: t.txt\n@@\n+c\n*** End Patch\n",
			after: map[string]string{"t.txt": "a\nb\nc\n"}},
		{name: "DeletionOnly", files: map[string]string{"t.txt": "a\nb\nc\n"},
			edit:  "*** Begin Patch\n*** Update File: t.txt\n@@\n a\n-b\n c\n*** End Patch\n",
			after: map[string]string{"t.txt": "a\nc\n"}},
		{name: "CRLFFileKeepsCRLF", files: map[string]string{"w.txt": "one\r\ntwo\r\nthree\r\n"},
			edit:  "*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+TWO\n+2\n three\n*** End Patch\n",
			after: map[string]string{"w.txt": "one\r\nTWO\r\n2\r\nthree\r\n"}},
		{name: "CRLFEnvelopeText", files: map[string]string{"w.txt": "one\ntwo\n"},
			edit:  "*** Begin Patch\r\n*** Update File: w.txt\r\n@@\r\n-two\r\n+2\r\n*** End Patch\r\n",
			after: map[string]string{"w.txt": "one\n2\n"}},
		{name: "NoFinalNewlineKept", files: map[string]string{"n.txt": "a\nb"},
			edit:  "*** Begin Patch\n*** Update File: n.txt\n@@\n a\n-b\n+B\n*** End Patch\n",
			after: map[string]string{"n.txt": "a\nB"}},
		{name: "TypographicPunctuationMatchesASCII", files: map[string]string{"q.md": "He said \u201chi\u201d \u2014 twice\nnext\n"},
			edit:  "*** Begin Patch\n*** Update File: q.md\n@@\n-He said \"hi\" - twice\n+He said \"hello\"\n next\n*** End Patch\n",
			after: map[string]string{"q.md": "He said \"hello\"\nnext\n"}},
		{name: "TrailingWhitespaceInFile", files: map[string]string{"s.txt": "a  \nb\t\n"},
			edit:  "*** Begin Patch\n*** Update File: s.txt\n@@\n-a\n+A\n b\n*** End Patch\n",
			after: map[string]string{"s.txt": "A\nb\t\n"}},
		{name: "ProseAndHeredocAround", files: map[string]string{"f.txt": "one\n"},
			edit:  "I'll apply this patch:\n\napply_patch <<'EOF'\n*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\n*** End Patch\nEOF\n\nDone.\n",
			after: map[string]string{"f.txt": "two\n"}},
		{name: "SeveralOperationsAtOnce", files: map[string]string{"modify.txt": "line1\nline2\n", "delete.txt": "bye\n", "old/name.txt": "n\n"},
			edit: "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n*** Delete File: delete.txt\n*** Update File: modify.txt\n@@\n-line2\n+changed\n" +
				"*** Update File: old/name.txt\n*** Move to: renamed/name.txt\n@@\n-n\n+N\n*** End Patch\n",
			after:  map[string]string{"nested/new.txt": "created\n", "delete.txt": gone, "modify.txt": "line1\nchanged\n", "old/name.txt": gone, "renamed/name.txt": "N\n"},
			status: []edit.Status{"applied", "applied", "applied", "applied"}},
		{name: "WholeEnvelopeResent", files: map[string]string{"modify.txt": "line1\nchanged\n", "new.txt": "created\n"},
			edit:   "*** Begin Patch\n*** Add File: new.txt\n+created\n*** Update File: modify.txt\n@@\n-line2\n+changed\n*** End Patch\n",
			status: []edit.Status{"already_applied", "already_applied"}, already: true},
		{name: "ErrUpdateMissingFile", files: map[string]string{},
			edit:   "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch\n",
			status: []edit.Status{"conflict"}, err: edit.ErrConflict, msg: []string{"does not exist", "*** Add File"}},
		{name: "ErrContextNotInFile", files: map[string]string{"app.py": greet},
			edit:   "*** Begin Patch\n*** Update File: app.py\n@@ def greet(name):\n-    print(\"Hey\", name)\n+    print(name)\n*** End Patch\n",
			status: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"closest lines", `print("Hi", name)`}},
		{name: "ErrAtAtLineNotInFile", files: map[string]string{"app.py": greet},
			edit:   "*** Begin Patch\n*** Update File: app.py\n@@ def farewell():\n-    pass\n+    return\n*** End Patch\n",
			status: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"@@ def farewell():"}},
		{name: "ErrOneFailureFailsAll", files: map[string]string{"a.txt": "a\n"},
			edit:   "*** Begin Patch\n*** Add File: b.txt\n+b\n*** Update File: a.txt\n@@\n-zzz\n+yyy\n*** End Patch\n",
			status: []edit.Status{"applied", "no_match"}, err: edit.ErrNoMatch, msg: []string{"nothing was changed"}},
		{name: "ErrCutBeforeEndPatch", files: map[string]string{"f.txt": "one\n"},
			edit: "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\n",
			err:  edit.ErrSyntax, msg: []string{"truncated"}},
		{name: "ErrEmptyPatch", files: map[string]string{"f.txt": "one\n"},
			edit: "*** Begin Patch\n*** End Patch\n", err: edit.ErrSyntax, msg: []string{"no file sections"}},
		{name: "ErrUpdateWithoutHunks", files: map[string]string{"f.txt": "one\n"},
			edit: "*** Begin Patch\n*** Update File: f.txt\n*** End Patch\n", err: edit.ErrSyntax, msg: []string{"no changes"}},
		{name: "ErrBadHunkLine", files: map[string]string{"f.txt": "one\n"},
			edit: "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\nthree\n*** End Patch\n", err: edit.ErrSyntax, msg: []string{"' ', '-', '+'"}},
	})
}
