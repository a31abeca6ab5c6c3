package confine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
)

// FuzzConfinedPath resolves arbitrary targets in a tree full of symlinks
// (escaping, looping, absolute, into protected places) and checks the two
// promises together: whatever the guard accepts is inside the root and not
// protected, and whatever directory the confined layer opens for it is
// that same directory inside the root.
func FuzzConfinedPath(f *testing.F) {
	for _, seed := range []string{
		"a/b/f", "../out/f", "esc/f", "in/b/f", "loop/f", "abs/passwd", ".git/hooks/pre-commit",
		"a/../../out/f", "a/./b/../b/f", "cfg/x", "a/b/../../esc/../a/f", "/etc/passwd", "", ".", "..",
		"a//b///f", "in/../esc/f", strings.Repeat("a/../", 50) + "f",
	} {
		f.Add(seed)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	root, out := filepath.Join(base, "root"), filepath.Join(base, "out")
	for _, d := range []string{filepath.Join(root, "a", "b"), out, filepath.Join(root, ".git", "hooks"), filepath.Join(root, "conf")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, to := range map[string]string{"esc": "../out", "in": "a", "loop": "loop", "abs": "/etc", "cfg": "conf", "a/up": "..", "a/b/gitlink": "../../.git"} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			f.Fatal(err)
		}
	}
	g, err := pathguard.NewProtected([]string{root}, pathguard.Protection{Always: []string{filepath.Join(root, "conf")}, Default: []string{".git"}})
	if err != nil {
		f.Fatal(err)
	}
	fsys, err := confine.New(g)
	if err != nil {
		f.Fatal(err)
	}
	defer fsys.Close()
	f.Fuzz(func(t *testing.T, target string) {
		if strings.ContainsRune(target, 0) || len(target) > 4096 {
			return
		}
		resolved, err := g.Resolve(target, root)
		if err != nil {
			return
		}
		if !g.Inside(resolved) {
			t.Fatalf("Resolve(%q) = %s, outside the root", target, resolved)
		}
		if m, ok := g.Protected(resolved); ok {
			t.Fatalf("Resolve(%q) = %s, protected by %s", target, resolved, m.Rule)
		}
		d, name, err := fsys.OpenParent(resolved)
		if err != nil {
			return
		}
		defer d.Close()
		if d.Path != filepath.Dir(resolved) || name != filepath.Base(resolved) {
			t.Fatalf("OpenParent(%s) = %s, %s", resolved, d.Path, name)
		}
		if real, err := filepath.EvalSymlinks(d.Path); err != nil || !g.Inside(real) {
			t.Fatalf("OpenParent(%s) opened %s (%v), outside the root", resolved, real, err)
		}
	})
}
