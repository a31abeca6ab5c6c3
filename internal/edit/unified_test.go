package edit_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// numbered returns n lines "line 1" ... "line n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestApplyUnifiedDiff(t *testing.T) {
	twenty := numbered(20)
	tests := []struct {
		name     string
		old      string
		diff     string
		want     string
		statuses []edit.Status
		offset   int // offset of the first hunk
		err      error
		msg      []string
	}{
		{name: "OK", old: twenty, diff: "--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n",
			want: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), statuses: []edit.Status{"applied"}},
		{name: "TwoHunks", old: twenty, diff: "@@ -1,2 +1,3 @@\n line 1\n+line 1.5\n line 2\n@@ -19,2 +20,1 @@\n line 19\n-line 20\n",
			want: strings.Replace(strings.Replace(twenty, "line 1\n", "line 1\nline 1.5\n", 1), "line 20\n", "", 1), statuses: []edit.Status{"applied", "applied"}},
		{name: "Offset", old: twenty, diff: "@@ -7,3 +7,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n",
			want: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), statuses: []edit.Status{"applied"}, offset: -3},
		{name: "NoLineNumbers", old: twenty, diff: "@@ ... @@\n line 4\n-line 5\n+LINE 5\n",
			want: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), statuses: []edit.Status{"applied"}},
		{name: "WrongCounts", old: twenty, diff: "@@ -4,9 +4,1 @@\n line 4\n-line 5\n+LINE 5\n line 6\n",
			want: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), statuses: []edit.Status{"applied"}},
		{name: "BlankLineAfterHunkIsSpacing", old: twenty, diff: "@@ -4,2 +4,2 @@\n line 4\n-line 5\n+LINE 5\n\n@@ -10 +10 @@\n-line 10\n+LINE 10\n\n",
			want: strings.Replace(strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), "line 10\n", "LINE 10\n", 1), statuses: []edit.Status{"applied", "applied"}},
		{name: "EmptyLineIsContext", old: "a\n\nb\n", diff: "@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n", want: "a\n\nB\n", statuses: []edit.Status{"applied"}},
		{name: "TrailingWhitespace", old: "a \nb\n", diff: "@@ -1,2 +1,2 @@\n a\n-b\n+B\n", want: "a \nB\n", statuses: []edit.Status{"applied"}},
		{name: "AddToEmptyFile", old: "", diff: "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n", want: "a\nb\n", statuses: []edit.Status{"applied"}},
		{name: "PureInsertionAfterLine", old: "a\nb\n", diff: "@@ -1,0 +2 @@\n+x\n", want: "a\nx\nb\n", statuses: []edit.Status{"applied"}},
		{name: "RemoveFinalNewline", old: "a\nb\n", diff: "@@ -2 +2 @@\n-b\n+b\n\\ No newline at end of file\n", want: "a\nb", statuses: []edit.Status{"applied"}},
		{name: "AddFinalNewline", old: "a\nb", diff: "@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n", want: "a\nb\n", statuses: []edit.Status{"applied"}},
		{name: "NoMarkerKeepsMissingNewline", old: "a\nb", diff: "@@ -2 +2 @@\n-b\n+B\n", want: "a\nB", statuses: []edit.Status{"applied"}},
		{name: "CRLF", old: "a\r\nb\r\nc\r\n", diff: "@@ -2 +2,2 @@\n-b\n+B\n+B2\n", want: "a\r\nB\r\nB2\r\nc\r\n", statuses: []edit.Status{"applied"}},
		{name: "RemovedLineLooksLikeHeader", old: "-- a\n++ b\nc\n", diff: "@@ -1,3 +1,1 @@\n--- a\n-++ b\n c\n", want: "c\n", statuses: []edit.Status{"applied"}},
		{name: "AlreadyApplied", old: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), diff: "@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n",
			want: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), statuses: []edit.Status{"already_applied"}},
		{name: "AlreadyAppliedAtEnd", old: "a\nb\nc\n", diff: "@@ -1,2 +1,3 @@\n a\n b\n+c\n", want: "a\nb\nc\n", statuses: []edit.Status{"already_applied"}},
		{name: "PartlyApplied", old: strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), diff: "@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n@@ -15 +15 @@\n-line 15\n+LINE 15\n",
			want: strings.Replace(strings.Replace(twenty, "line 5\n", "LINE 5\n", 1), "line 15\n", "LINE 15\n", 1), statuses: []edit.Status{"already_applied", "applied"}},
		{name: "ContextMismatch", old: twenty, diff: "@@ -4,3 +4,3 @@\n line 4\n-line five\n+LINE 5\n line 6\n",
			statuses: []edit.Status{"context_mismatch"}, err: edit.ErrContextMismatch, msg: []string{"hunk 1 (edit line 1): context_mismatch", "near line 4", "     4 | line 4"}},
		{name: "ContextTooFar", old: numbered(200), diff: "@@ -150,2 +150,2 @@\n line 5\n-line 6\n+LINE 6\n",
			statuses: []edit.Status{"context_mismatch"}, err: edit.ErrContextMismatch, msg: []string{"they match at line 5"}},
		{name: "OutOfRange", old: twenty, diff: "@@ -90,2 +90,2 @@\n line x\n-line y\n+LINE y\n",
			statuses: []edit.Status{"out_of_range"}, err: edit.ErrOutOfRange, msg: []string{"the file has 20 lines"}},
		{name: "InsertionOutOfRange", old: twenty, diff: "@@ -25,0 +26 @@\n+x\n",
			statuses: []edit.Status{"out_of_range"}, err: edit.ErrOutOfRange},
		{name: "Overlap", old: twenty, diff: "@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n@@ -6,2 +6,2 @@\n line 6\n-line 7\n+LINE 7\n",
			statuses: []edit.Status{"applied", "overlap"}, err: edit.ErrOverlap, msg: []string{"hunk 1 (lines 4-6)"}},
		{name: "AmbiguousWithoutNumbers", old: "x\ny\nx\ny\n", diff: "@@\n x\n-y\n+Y\n",
			statuses: []edit.Status{"ambiguous"}, err: edit.ErrAmbiguous, msg: []string{"lines 1, 3"}},
		{name: "ErrBadHeader", old: twenty, diff: "@@ -4,x +4 @@\n a\n", err: edit.ErrSyntax},
		{name: "ErrNoHunks", old: twenty, diff: "--- a/f\n+++ b/f\n", err: edit.ErrSyntax},
		{name: "ErrSeveralFiles", old: twenty, diff: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-line 1\n+x\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n", err: edit.ErrMultiFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := edit.ApplyUnifiedDiff([]byte(tt.old), []byte(tt.diff))
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
				t.Fatalf("ApplyUnifiedDiff: %v", err)
			}
			if got := string(res.Content); got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if got := res.Blocks[0].Offset; got != tt.offset {
				t.Errorf("offset = %d, want %d", got, tt.offset)
			}
		})
	}
}
