package edit_test

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// files is a fake file system for ApplyEnvelope.
type files map[string]string

func (f files) read(path string) ([]byte, bool, error) {
	if path == "broken" {
		return nil, false, fs.ErrPermission
	}
	s, ok := f[path]
	return []byte(s), ok, nil
}

func envelope(body string) string { return "*** Begin Patch\n" + body + "*** End Patch\n" }

const py = `class A:
    def f(self):
        return 1

class B:
    def f(self):
        return 1
`

func TestApplyEnvelope(t *testing.T) {
	fsys := files{"a.py": py, "b.txt": "x\ny\n", "crlf.txt": "x\r\ny\r\n", "dst.txt": "moved\nY\n"}
	type op struct {
		kind          edit.FileOpKind
		path, moveTo  string
		content, orig string
	}
	tests := []struct {
		name     string
		edit     string
		ops      []op
		statuses []edit.Status
		err      error
		msg      []string
	}{
		{name: "AddUpdateDeleteMove", edit: envelope("*** Add File: new.txt\n+hello\n+world\n" +
			"*** Update File: a.py\n@@ class B:\n     def f(self):\n-        return 1\n+        return 2\n" +
			"*** Delete File: b.txt\n" +
			"*** Update File: crlf.txt\n*** Move to: moved.txt\n@@\n x\n-y\n+Y\n"),
			ops: []op{
				{kind: edit.OpAdd, path: "new.txt", content: "hello\nworld\n"},
				{kind: edit.OpUpdate, path: "a.py", content: py[:len(py)-9] + "return 2\n", orig: py},
				{kind: edit.OpDelete, path: "b.txt", orig: "x\ny\n"},
				{kind: edit.OpMove, path: "crlf.txt", moveTo: "moved.txt", content: "x\r\nY\r\n", orig: "x\r\ny\r\n"},
			},
			statuses: []edit.Status{"applied", "applied", "applied", "applied"}},
		{name: "FirstChunkWithoutAnchor", edit: envelope("*** Update File: b.txt\n x\n-y\n+z\n"),
			ops: []op{{kind: edit.OpUpdate, path: "b.txt", content: "x\nz\n", orig: "x\ny\n"}}, statuses: []edit.Status{"applied"}},
		{name: "NestedAnchors", edit: envelope("*** Update File: a.py\n@@ class B:\n@@ def f(self):\n-        return 1\n+        return 3\n"),
			ops: []op{{kind: edit.OpUpdate, path: "a.py", content: py[:len(py)-9] + "return 3\n", orig: py}}, statuses: []edit.Status{"applied"}},
		{name: "EndOfFile", edit: envelope("*** Update File: b.txt\n@@\n-y\n+z\n*** End of File\n"),
			ops: []op{{kind: edit.OpUpdate, path: "b.txt", content: "x\nz\n", orig: "x\ny\n"}}, statuses: []edit.Status{"applied"}},
		{name: "InsertAtEnd", edit: envelope("*** Update File: b.txt\n@@\n+z\n"),
			ops: []op{{kind: edit.OpUpdate, path: "b.txt", content: "x\ny\nz\n", orig: "x\ny\n"}}, statuses: []edit.Status{"applied"}},
		{name: "AlreadyApplied", edit: envelope("*** Add File: b.txt\n+x\n+y\n*** Update File: a.py\n@@ class A:\n-        return 0\n+        return 1\n"),
			ops: nil, statuses: []edit.Status{"already_applied", "already_applied"}},
		{name: "DeleteMissing", edit: envelope("*** Delete File: gone.txt\n"),
			statuses: []edit.Status{"conflict"}, err: edit.ErrConflict, msg: []string{"nothing to delete"}},
		{name: "MoveResent", edit: envelope("*** Update File: src.txt\n*** Move to: dst.txt\n@@\n moved\n-y\n+Y\n"),
			ops: nil, statuses: []edit.Status{"already_applied"}},
		{name: "Ambiguous", edit: envelope("*** Update File: a.py\n     def f(self):\n-        return 1\n+        return 2\n"),
			statuses: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous, msg: []string{"part 1 (a.py, edit line 3): ambiguous", "match 2 times in the file, at lines 2, 6", "add an \"@@\" line"}},
		{name: "NoMatch", edit: envelope("*** Update File: a.py\n@@ class A:\n-        return 9\n+        return 2\n"),
			statuses: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"closest lines", "     3 |         return 1"}},
		{name: "AnchorNotFound", edit: envelope("*** Update File: a.py\n@@ class C:\n-        return 1\n+        return 2\n"),
			statuses: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{`"@@ class C:" line is not in the file`}},
		{name: "AddExistingReplaces", edit: envelope("*** Add File: b.txt\n+other\n"),
			ops: []op{{kind: edit.OpAdd, path: "b.txt", content: "other\n"}}, statuses: []edit.Status{"applied"}},
		{name: "UpdateMissing", edit: envelope("*** Update File: nope.txt\n-a\n+b\n"),
			statuses: []edit.Status{"conflict"}, err: edit.ErrConflict},
		{name: "MoveOntoExistingReplaces", edit: envelope("*** Update File: b.txt\n*** Move to: a.py\n"),
			ops: []op{{kind: edit.OpMove, path: "b.txt", moveTo: "a.py", content: "x\ny\n", orig: "x\ny\n"}}, statuses: []edit.Status{"applied"}},
		{name: "OneFailureFailsAll", edit: envelope("*** Add File: n.txt\n+a\n*** Update File: b.txt\n-q\n+r\n"),
			statuses: []edit.Status{"applied", "no_match"}, err: edit.ErrNoMatch, msg: []string{"1 of 2 parts failed"}},
		{name: "ErrReadFails", edit: envelope("*** Delete File: broken\n"), err: fs.ErrPermission},
		{name: "ErrMissingEnd", edit: "*** Begin Patch\n*** Delete File: b.txt\n", err: edit.ErrSyntax, msg: []string{"truncated"}},
		{name: "ErrMissingBegin", edit: "*** Delete File: b.txt\n*** End Patch\n", err: edit.ErrSyntax},
		{name: "ErrEmpty", edit: envelope(""), err: edit.ErrSyntax},
		{name: "ErrAddLineWithoutPlus", edit: envelope("*** Add File: n.txt\nhello\n"), err: edit.ErrSyntax, msg: []string{"line 3"}},
		{name: "ErrUpdateWithoutChunks", edit: envelope("*** Update File: b.txt\n"), err: edit.ErrSyntax},
		{name: "ErrSamePathTwice", edit: envelope("*** Delete File: b.txt\n*** Add File: b.txt\n+a\n"), err: edit.ErrSyntax, msg: []string{"merge"}},
		{name: "ErrBadLine", edit: envelope("*** Update File: b.txt\n*x\n"), err: edit.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := edit.ApplyEnvelope([]byte(tt.edit), fsys.read)
			var got []edit.Status
			for _, b := range res.Blocks {
				got = append(got, b.Status)
			}
			if !slices.Equal(got, tt.statuses) {
				t.Errorf("statuses = %v, want %v (err %v)", got, tt.statuses, err)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				for _, m := range tt.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not contain %q", err, m)
					}
				}
				if res.Files != nil {
					t.Errorf("files %v on error", res.Files)
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyEnvelope: %v", err)
			}
			if len(res.Files) != len(tt.ops) {
				t.Fatalf("got %d file ops, want %d: %+v", len(res.Files), len(tt.ops), res.Files)
			}
			for i, w := range tt.ops {
				g := res.Files[i]
				if g.Kind != w.kind || g.Path != w.path || g.MoveTo != w.moveTo || string(g.Content) != w.content || string(g.Old) != w.orig {
					t.Errorf("op %d = {%s %s %s %q %q}, want {%s %s %s %q %q}", i, g.Kind, g.Path, g.MoveTo, g.Content, g.Old, w.kind, w.path, w.moveTo, w.content, w.orig)
				}
			}
			if got, want := res.Changed, len(tt.ops) > 0; got != want {
				t.Errorf("changed = %v, want %v", got, want)
			}
		})
	}
}
