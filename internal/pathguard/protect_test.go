package pathguard_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
)

// Every default entry is refused under a root that holds it (the home
// directory), and so is every path below a directory entry.
func TestDefaultProtectedRefused(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".local", "state", "orion")
	g, err := pathguard.NewProtected([]string{home}, pathguard.Protection{
		Always:  []string{state, filepath.Join(home, ".config", "orion")},
		Default: pathguard.DefaultProtected(home),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range append(pathguard.DefaultProtected(home), state, filepath.Join(home, ".config", "orion", "oriond.toml")) {
		target := entry
		if !filepath.IsAbs(entry) {
			target = filepath.Join(home, "proj", entry, "hooks", "pre-commit")
		}
		for _, p := range []string{target, filepath.Join(target, "below")} {
			_, err := g.Resolve(p, "")
			if reason(err) != pathguard.ReasonProtected {
				t.Errorf("Resolve(%s) = %v, want %s", p, err, pathguard.ReasonProtected)
			}
		}
	}
	for _, ok := range []string{filepath.Join(home, "notes.md"), filepath.Join(home, ".bashrc.bak"), filepath.Join(home, "proj", ".gitignore"),
		filepath.Join(home, ".config", "other.toml")} {
		if _, err := g.Resolve(ok, ""); err != nil && reason(err) != pathguard.ReasonParentMissing {
			t.Errorf("Resolve(%s) = %v, want it allowed", ok, err)
		}
	}
}

func TestProtectedLifted(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, "state")
	tests := []struct {
		name    string
		roots   []string
		allowed []string
		path    string
		want    string
	}{
		{name: "DefaultRefused", path: filepath.Join(home, ".ssh", "config"), want: pathguard.ReasonProtected},
		{name: "AllowProtectedDir", allowed: []string{filepath.Join(home, ".ssh")}, path: filepath.Join(home, ".ssh", "config")},
		{name: "AllowProtectedFileOnly", allowed: []string{filepath.Join(home, ".ssh", "config")}, path: filepath.Join(home, ".ssh", "authorized_keys"), want: pathguard.ReasonProtected},
		{name: "AllowProtectedFile", allowed: []string{filepath.Join(home, ".ssh", "config")}, path: filepath.Join(home, ".ssh", "config")},
		{name: "RootInsideEntry", roots: []string{home, filepath.Join(home, ".ssh")}, path: filepath.Join(home, ".ssh", "config")},
		{name: "GitName", path: filepath.Join(home, "p", ".git", "config"), want: pathguard.ReasonProtected},
		{name: "GitNameLifted", allowed: []string{".git"}, path: filepath.Join(home, "p", ".git", "config")},
		{name: "AlwaysNotLifted", allowed: []string{state}, roots: []string{home, state}, path: filepath.Join(state, "orion.db"), want: pathguard.ReasonProtected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roots := tt.roots
			if roots == nil {
				roots = []string{home}
			}
			os.MkdirAll(state, 0o700)
			g, err := pathguard.NewProtected(roots, pathguard.Protection{
				Always: []string{state}, Default: pathguard.DefaultProtected(home), Allowed: tt.allowed})
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Resolve(tt.path, "")
			if got := reason(err); got != tt.want && !(tt.want == "" && got == pathguard.ReasonParentMissing) {
				t.Fatalf("Resolve(%s) = %v (reason %q), want %q", tt.path, err, got, tt.want)
			}
		})
	}
}

func reason(err error) string {
	if pe, ok := err.(*pathguard.Error); ok {
		return pe.Reason
	}
	return ""
}
