package edit_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// sr builds search/replace blocks from search, replace pairs.
func sr(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString("<<<<<<< SEARCH\n" + pairs[i] + "=======\n" + pairs[i+1] + ">>>>>>> REPLACE\n")
	}
	return b.String()
}

const goFile = `package p

func f() int {
	x := 1
	return x
}

func g() int {
	x := 1
	return x + 1
}
`

func TestApplySearchReplace(t *testing.T) {
	tests := []struct {
		name     string
		old      string
		edit     string
		want     string        // new content, when the edit succeeds
		statuses []edit.Status // per block
		match    edit.Match    // match level of the first block, if set
		err      error
		msg      []string // substrings of the error message
	}{
		{name: "Exact", old: goFile, edit: sr("func f() int {\n\tx := 1\n", "func f() int {\n\tx := 2\n"),
			want: strings.Replace(goFile, "x := 1", "x := 2", 1), statuses: []edit.Status{"applied"}, match: edit.MatchExact},
		{name: "SeveralInOrder", old: goFile, edit: sr("\treturn x\n", "\treturn x * 2\n", "\treturn x * 2\n}\n", "\treturn x * 2\n}\n\n// end f\n"),
			want: strings.Replace(goFile, "\treturn x\n}\n", "\treturn x * 2\n}\n\n// end f\n", 1), statuses: []edit.Status{"applied", "applied"}},
		{name: "TrailingWhitespace", old: "a  \nb\t\nc\n", edit: sr("a\nb\n", "A\nB\n"),
			want: "A\nB\nc\n", statuses: []edit.Status{"applied"}, match: edit.MatchTrailingSpace},
		{name: "IndentationReindentsReplacement", old: "func h() {\n\tif ok {\n\t\tdo()\n\t}\n}\n", edit: sr("if ok {\n\tdo()\n}\n", "if ok {\n\tdo()\n\tmore()\n}\n"),
			want: "func h() {\n\tif ok {\n\t\tdo()\n\t\tmore()\n\t}\n}\n", statuses: []edit.Status{"applied"}, match: edit.MatchIndentation},
		{name: "BlankEdgeLines", old: "a\nb\nc\n", edit: sr("\nb\n\n", "\nB\n\n"),
			want: "a\nB\nc\n", statuses: []edit.Status{"applied"}},
		{name: "FencesAndProseIgnored", old: "a\nb\n", edit: "Here is the change:\n```go\nfile.go\n" + sr("a\n", "A\n") + "```\n",
			want: "A\nb\n", statuses: []edit.Status{"applied"}},
		{name: "Delete", old: "a\nb\nc\n", edit: sr("b\n", ""), want: "a\nc\n", statuses: []edit.Status{"applied"}},
		{name: "EmptySearchFillsEmptyFile", old: "", edit: sr("", "hello\n"), want: "hello\n", statuses: []edit.Status{"applied"}},
		{name: "CRLFFileLFEdit", old: "a\r\nb\r\nc\r\n", edit: sr("b\n", "B1\nB2\n"),
			want: "a\r\nB1\r\nB2\r\nc\r\n", statuses: []edit.Status{"applied"}},
		{name: "CRLFEdit", old: "a\nb\n", edit: strings.ReplaceAll(sr("b\n", "B\n"), "\n", "\r\n"),
			want: "a\nB\n", statuses: []edit.Status{"applied"}},
		{name: "NoFinalNewlineKept", old: "a\nb", edit: sr("b\n", "B\nC\n"), want: "a\nB\nC", statuses: []edit.Status{"applied"}},
		{name: "AlreadyApplied", old: strings.Replace(goFile, "x := 1", "x := 2", 1), edit: sr("func f() int {\n\tx := 1\n", "func f() int {\n\tx := 2\n"),
			want: strings.Replace(goFile, "x := 1", "x := 2", 1), statuses: []edit.Status{"already_applied"}},
		{name: "AlreadyAppliedAppend", old: "a\nb\nc\n", edit: sr("a\n", "a\nb\n"),
			want: "a\nb\nc\n", statuses: []edit.Status{"already_applied"}},
		{name: "ResendOfPartlyAppliedEdit", old: "A\nb\nc\n", edit: sr("a\n", "A\n", "c\n", "C\n"),
			want: "A\nb\nC\n", statuses: []edit.Status{"already_applied", "applied"}},
		{name: "NoMatch", old: goFile, edit: sr("func f() int {\n\ty := 1\n", "x\n"),
			statuses: []edit.Status{"no_match"}, err: edit.ErrNoMatch,
			msg: []string{"block 1 (edit line 1): no_match", "closest lines of the file", "     3 | func f() int {", "     4 | \tx := 1"}},
		{name: "Ambiguous", old: goFile, edit: sr("\tx := 1\n", "\tx := 3\n"),
			statuses: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous, msg: []string{"matches 2 times, at lines 4, 9"}},
		{name: "AmbiguousWhenOnlyTolerantMatches", old: "\ta\n  a\n", edit: sr("a\n", "b\n"),
			statuses: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous},
		{name: "OneFailedBlockFailsAll", old: "a\nb\nc\n", edit: sr("a\n", "A\n", "x\n", "X\n", "c\n", "C\n"),
			statuses: []edit.Status{"applied", "no_match", "applied"}, err: edit.ErrNoMatch, msg: []string{"1 of 3 blocks failed", "block 2"}},
		{name: "EmptySearchOnNonEmptyFile", old: "a\n", edit: sr("", "b\n"),
			statuses: []edit.Status{"no_match"}, err: edit.ErrNoMatch, msg: []string{"only creates a new file"}},
		{name: "ErrUnterminated", old: "a\n", edit: "<<<<<<< SEARCH\na\n=======\nb\n", err: edit.ErrSyntax, msg: []string{"truncated"}},
		{name: "ErrStrayDivider", old: "a\n", edit: "=======\n" + sr("a\n", "b\n"), err: edit.ErrSyntax, msg: []string{"line 1"}},
		{name: "ErrReplaceBeforeDivider", old: "a\n", edit: "<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n", err: edit.ErrSyntax},
		{name: "ErrNoBlocks", old: "a\n", edit: "just prose\n", err: edit.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := edit.ApplySearchReplace([]byte(tt.old), []byte(tt.edit))
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
				return
			}
			if err != nil {
				t.Fatalf("ApplySearchReplace: %v", err)
			}
			if got := string(res.Content); got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if tt.match != "" && res.Blocks[0].Match != tt.match {
				t.Errorf("match = %s, want %s", res.Blocks[0].Match, tt.match)
			}
		})
	}
}

// A failing block reports the closest lines in the result as well as in
// the error, for a client that shows structured results.
func TestSearchReplaceClosest(t *testing.T) {
	res, err := edit.ApplySearchReplace([]byte(goFile), []byte(sr("func g() int {\n\tx := 2\n\treturn x + 1\n", "")))
	var e *edit.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *edit.Error", err)
	}
	c := res.Blocks[0].Closest
	if c == nil {
		t.Fatal("no closest excerpt")
	}
	if got, want := c.StartLine, 8; got != want {
		t.Errorf("closest starts at %d, want %d", got, want)
	}
	if c.Similarity < 0.6 || c.Similarity >= 1 {
		t.Errorf("similarity = %v, want in [0.6, 1)", c.Similarity)
	}
}
