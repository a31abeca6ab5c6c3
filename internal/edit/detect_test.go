package edit_test

import (
	"errors"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    edit.Format
	}{
		{"SearchReplace", sr("a\n", "b\n"), edit.FormatSearchReplace},
		{"SearchReplaceInFence", "file.go\n```go\n" + sr("a\n", "b\n") + "```\n", edit.FormatSearchReplace},
		{"UnifiedDiff", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", edit.FormatUnifiedDiff},
		{"GitDiff", "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", edit.FormatUnifiedDiff},
		{"BareHunk", "@@ -1 +1 @@\n-a\n+b\n", edit.FormatUnifiedDiff},
		{"Envelope", "\n*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End Patch\n", edit.FormatEnvelope},
		{"DiffAddingSearchMarkers", "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n a\n+<<<<<<< SEARCH\n", edit.FormatUnifiedDiff},
		{"MarkdownRuleIsNotDiff", "Title\n---\ntext\n", edit.FormatUnknown},
		{"Prose", "just some text\n", edit.FormatUnknown},
		{"Empty", "", edit.FormatUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := edit.Detect([]byte(tt.content)); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestApplyDispatch(t *testing.T) {
	old := []byte("a\nb\n")
	for _, c := range []struct {
		name, content string
		want          string
		err           error
	}{
		{"SearchReplace", sr("a\n", "A\n"), "A\nb\n", nil},
		{"UnifiedDiff", "@@ -2 +2 @@\n-b\n+B\n", "a\nB\n", nil},
		{"ErrEnvelope", "*** Begin Patch\n*** Delete File: f\n*** End Patch\n", "", edit.ErrMultiFile},
		{"ErrUnknown", "a\nb\n", "", edit.ErrUnknownFormat},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := edit.Apply(old, []byte(c.content))
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Content); got != c.want {
				t.Errorf("content = %q, want %q", got, c.want)
			}
		})
	}
}
