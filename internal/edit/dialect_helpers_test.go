package edit_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// gone marks a file an edit deletes, in dialectCase.after.
const gone = "\x00gone"

// dialectCase is one case of an agent's edit format, applied with
// edit.ApplyFiles to a fake tree, as the daemon applies a streamed edit.
type dialectCase struct {
	name string
	// files is the tree before; target is the session's target (blocks
	// that name no file edit it), "app.py" when empty.
	files  map[string]string
	target string
	edit   string
	// after lists every file the edit changes, with its new content (or
	// gone); files not listed must be untouched.
	after map[string]string
	// status is every part's status, in the edit's order, when set.
	status []edit.Status
	// err and msg: the sentinel the error matches and substrings of it.
	err error
	msg []string
	// already: the edit is reported as already applied as a whole.
	already bool
	// dialect is the dialect the result must name, when set.
	dialect edit.Dialect
	// replaced: paths whose FileOp must say Replaced (an existing file
	// that an add or a move overwrites).
	replaced []string
}

func runDialectCases(t *testing.T, cases []dialectCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.target
			if target == "" {
				target = "app.py"
			}
			read := func(p string) ([]byte, bool, error) {
				s, ok := tc.files[p]
				return []byte(s), ok, nil
			}
			res, err := edit.ApplyFiles([]byte(tc.edit), target, read, nil)
			if tc.dialect != "" && res.Dialect != tc.dialect {
				t.Errorf("dialect = %q, want %q", res.Dialect, tc.dialect)
			}
			if tc.status != nil {
				var got []edit.Status
				for _, b := range res.Blocks {
					got = append(got, b.Status)
				}
				if !slices.Equal(got, tc.status) {
					t.Errorf("statuses = %v, want %v (err %v)", got, tc.status, err)
				}
			}
			if tc.err != nil || len(tc.msg) > 0 {
				if err == nil {
					t.Fatalf("no error, want %v %q", tc.err, tc.msg)
				}
				if tc.err != nil && !errors.Is(err, tc.err) {
					t.Errorf("err = %v, want %v", err, tc.err)
				}
				for _, m := range tc.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not contain %q", err, m)
					}
				}
				if len(res.Files) != 0 {
					t.Errorf("file operations %v on error: nothing may be written", res.Files)
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyFiles: %v", err)
			}
			tree := maps.Clone(tc.files)
			if tree == nil {
				tree = map[string]string{}
			}
			var replaced []string
			for _, op := range res.Files {
				switch op.Kind {
				case edit.OpAdd, edit.OpUpdate:
					tree[op.Path] = string(op.Content)
				case edit.OpDelete:
					tree[op.Path] = gone
				case edit.OpMove:
					tree[op.Path] = gone
					tree[op.MoveTo] = string(op.Content)
				}
				switch {
				case op.Replaced && op.Kind == edit.OpMove:
					replaced = append(replaced, op.MoveTo)
				case op.Replaced:
					replaced = append(replaced, op.Path)
				}
			}
			for p, want := range tc.after {
				if got, ok := tree[p]; !ok || got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			for p, before := range tc.files {
				if _, listed := tc.after[p]; !listed && tree[p] != before {
					t.Errorf("%s changed to %q; it is not one of the files the edit changes", p, tree[p])
				}
			}
			for p := range tree {
				if _, ok := tc.files[p]; !ok {
					if _, listed := tc.after[p]; !listed {
						t.Errorf("%s created; it is not one of the files the edit changes", p)
					}
				}
			}
			if got, want := res.AlreadyApplied, tc.already; got != want {
				t.Errorf("already_applied = %v, want %v", got, want)
			}
			if got, want := res.Changed, len(tc.after) > 0; got != want {
				t.Errorf("changed = %v, want %v", got, want)
			}
			if tc.replaced != nil && !slices.Equal(replaced, tc.replaced) {
				t.Errorf("replaced = %v, want %v", replaced, tc.replaced)
			}
		})
	}
}
