package edit_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
)

// A failed edit's message without the file's text keeps what failed and
// where the closest lines are, and none of the lines themselves, for
// every way an edit reports them: several search/replace blocks, a diff
// hunk, and a patch spec.
func TestWithoutFileText(t *testing.T) {
	const file = "API_KEY=sk-live-0001\nDB_PASSWORD=hunter2\nDEBUG=false\n"
	cases := []struct {
		name  string
		apply func() error
		keep  []string
	}{
		{"SearchReplace", func() error {
			_, err := edit.Apply([]byte(file), []byte(sr("API_KEY=guess\n", "API_KEY=x\n", "DB_PASSWORD=guess\n", "DB_PASSWORD=x\n")))
			return err
		}, []string{"2 of 2 blocks failed", "block 1", "block 2", "no_match", "closest lines of the file: line 1 (", "closest lines of the file: line 2 ("}},
		{"UnifiedDiff", func() error {
			_, err := edit.Apply([]byte(file), []byte("--- a/.env\n+++ b/.env\n@@ -1,2 +1,2 @@\n-API_KEY=guess\n DB_PASSWORD=guess\n+API_KEY=x\n"))
			return err
		}, []string{"context_mismatch", "closest lines of the file: lines 1-2 ("}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.apply()
			if err == nil {
				t.Fatal("the edit applied; want a failure")
			}
			full := ".env: " + err.Error()
			if !strings.Contains(full, "hunter2") && !strings.Contains(full, "sk-live-0001") {
				t.Fatalf("the error shows no line of the file, so this test proves nothing:\n%s", full)
			}
			got := edit.WithoutFileText(full)
			for _, secret := range []string{"hunter2", "sk-live-0001", "DEBUG=false"} {
				if strings.Contains(got, secret) {
					t.Errorf("%q is still in:\n%s", secret, got)
				}
			}
			for _, k := range c.keep {
				if !strings.Contains(got, k) {
					t.Errorf("%q is missing from:\n%s", k, got)
				}
			}
			if !strings.HasPrefix(got, ".env: ") {
				t.Errorf("the message lost its start:\n%s", got)
			}
		})
	}
	if msg := "session not found"; edit.WithoutFileText(msg) != msg {
		t.Errorf("a message with no excerpt changed: %q", edit.WithoutFileText(msg))
	}
}
