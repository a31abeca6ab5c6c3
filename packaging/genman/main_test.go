package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

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
		`.SS "oriond run [flags]"`, `.SS "oriond service install [run flags] [flags]"`, `.SS "oriond config print [run flags] [flags]"`,
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

func TestWrap(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
	}{
		{"Short", "  -q, --quiet   be quiet", []string{"  -q, --quiet   be quiet"}},
		{"Flag", "      --config string   config file (default ~/.config/orion/oriond.toml) [ORION_CONFIG]", []string{
			"      --config string   config file (default ~/.config/orion/oriond.toml)",
			"                        [ORION_CONFIG]",
		}},
		{"Example", "  orionctl tx write --op edit main.go=fix1.diff util.go=fix2.diff --dry-run --workspace-root x", []string{
			"  orionctl tx write --op edit main.go=fix1.diff util.go=fix2.diff",
			"  --dry-run --workspace-root x",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wrap(tt.line, optionWidth)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Every line of the options and of each command's flags fits an
// 80-column terminal once man indents it, and names no path of the
// machine that built the page.
func TestOptionsFitEightyColumns(t *testing.T) {
	all, err := walk(testdaemon.Binary(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	for _, h := range all {
		for _, l := range h.rest {
			if n := utf8.RuneCountInString(l); n > optionWidth {
				t.Errorf("oriond %s: %d columns: %q", strings.Join(h.path, " "), n, l)
			}
			if home != "" && strings.Contains(l, home+"/") {
				t.Errorf("oriond %s: names this machine's home: %q", strings.Join(h.path, " "), l)
			}
		}
	}
}
