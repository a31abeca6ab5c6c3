package newfile_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/charset"
	"github.com/orion-agent/orion/internal/newfile"
)

// A new file is written in the very bytes git checks the same text out
// as, under the same .gitattributes (working-tree-encoding, eol), and a
// file git checked out decodes back to the text git holds. Runs the real
// git, when it is installed.
func TestMatchesGitCheckout(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: ", err)
	}
	dir := t.TempDir()
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		// The person's own configuration (core.autocrlf, say) must not
		// change what git writes.
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	cases := []struct{ name, attrs, text string }{
		{"a.w16", "working-tree-encoding=UTF-16LE eol=crlf", "café 日本\nx\n"},
		{"a.b16", "working-tree-encoding=UTF-16BE", "café 日本\nx\n"},
		{"a.u16", "working-tree-encoding=UTF-16", "café 日本\nx\n"},
		{"a.sj", "working-tree-encoding=SHIFT_JIS", "日本語\nx\n"},
		{"a.l1", "working-tree-encoding=ISO-8859-1 eol=crlf", "café ©\nx\n"},
		{"a.cp", "working-tree-encoding=WINDOWS-1252", "“café” €\nx\n"},
		{"a.crlf", "text eol=crlf", "café\nx\n"},
	}
	var attrs strings.Builder
	for _, c := range cases {
		attrs.WriteString("*" + filepath.Ext(c.name) + " " + c.attrs + "\n")
	}
	git("", "init", "-q", ".")
	if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte(attrs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(p string) ([]byte, bool) {
		b, err := os.ReadFile(p)
		return b, err == nil
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// git holds the text as UTF-8 with LF; checkout converts it.
			blob := git(c.text, "hash-object", "-w", "--stdin")
			git("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+c.name)
			git("", "checkout", "--", c.name)
			want, err := os.ReadFile(filepath.Join(dir, c.name))
			if err != nil {
				t.Fatal(err)
			}
			style := newfile.Lookup(filepath.ToSlash(filepath.Join(dir, c.name)), filepath.ToSlash(dir), read)
			got, _, err := newfile.Apply([]byte(c.text), style)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("written as %q, %v; git checks it out as %q", got, err, want)
			}
			name, from := style.FileCharset()
			codec, text, err := charset.DecodeFile(want, name, from)
			if err != nil {
				t.Fatalf("git's checkout does not decode: %v", err)
			}
			if got := strings.ReplaceAll(string(text), "\r\n", "\n"); got != c.text {
				t.Fatalf("git's checkout decodes (as %s) to %q, want %q", codec, got, c.text)
			}
		})
	}
}
