package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `oriond config print` ends with every protection rule, its reason and
// what it protects on this machine: the $PATH directories in home from
// the environment, the hidden entries of home, and what allow-protected
// lifts.
func TestConfigPrintShowsProtectionRules(t *testing.T) {
	home := t.TempDir()
	sdk := filepath.Join(home, "sdk", "bin")
	lifted := filepath.Join(home, ".vimrc")
	_, out, err := configPrint(t, map[string]string{"HOME": home, "PATH": "/usr/bin:" + sdk},
		"--allow-protected", lifted, "--allow-protected", ".vscode")
	if err != nil {
		t.Fatalf("config print: %v\n%s", err, out)
	}
	_, rules, ok := strings.Cut(out, "# Protected paths")
	if !ok {
		t.Fatalf("config print has no protected paths:\n%s", out)
	}
	for _, want := range []string{
		"# Rule oriond-files:", "# Rule listed:", "# Rule git-name:", "# Rule git-link:", "# Rule git-dir:",
		"# Rule agent-config:", "# Rule path-dir:", "# Rule home-hidden:",
		"#   " + sdk + "\n", "#   " + filepath.Join(home, ".local", "bin") + "\n", "#   " + filepath.Join(home, ".*") + "\n",
		"#   .vscode (any case)\n", "#   .git (any case)\n",
		"# Allowed by allow-protected:\n#   " + lifted + "\n#   .vscode\n",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("config print lacks %q:\n%s", want, rules)
		}
	}
	if strings.Contains(rules, "#   /usr/bin\n") {
		t.Errorf("a $PATH directory outside home is listed:\n%s", rules)
	}
}
