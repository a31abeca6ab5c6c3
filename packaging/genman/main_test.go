package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		`.TH not a request`: `\&.TH not a request`,
		`'quoted`:           `\&'quoted`,
		`--flag \n`:         `\-\-flag \en`,
		`plain`:             `plain`,
	} {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOriondPage generates oriond's page from the real binary: every
// command is in it, and groff formats it without a warning.
func TestOriondPage(t *testing.T) {
	var page bytes.Buffer
	if err := write(&page, testdaemon.Binary(t), "the Orion write-session daemon", ".SH SEE ALSO\n.BR orionctl (1)\n", "2026-01-02", "orion"); err != nil {
		t.Fatal(err)
	}
	text := page.String()
	for _, want := range []string{`.TH ORIOND 1 "2026-01-02"`, ".SH NAME\noriond \\- the Orion write\\-session daemon", ".SH COMMANDS",
		`.SS "oriond run [flags]"`, `.SS "oriond service install [\-\- RUN\-FLAGS...] [flags]"`, `.SS "oriond config print [run flags] [flags]"`,
		".SH SEE ALSO"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(text, "Global Flags") {
		t.Error("the root's flags are repeated under every command")
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("no groff to format the page")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("groff: %v\n%s", err, out)
	}
}
