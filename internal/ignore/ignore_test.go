package ignore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/ignore"
)

// The matcher says what git check-ignore says, on the same tree.
func TestMatchesGitCheckIgnore(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: nothing to compare with")
	}
	root := t.TempDir()
	files := map[string]string{
		".gitignore":        "*.log\n!keep.log\n/build\ndist/\n# comment\n\\#hash\nspace\\ \n**/deep/*.tmp\ndoc/**/*.pdf\na?c\n[ab]x.txt\n[!q]y.txt\nfoo/**\n*.o\n!*.o/\n",
		"sub/.gitignore":    "local.txt\n/anchored.txt\n!important.log\nnested/inner\n",
		".orionignore":      "secret.env\n",
		".git/info/exclude": "excluded-by-info\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	cmd := exec.Command(git, "init", "-q", root)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	// git init may rewrite info/exclude: put ours back.
	os.WriteFile(filepath.Join(root, ".git/info/exclude"), []byte(files[".git/info/exclude"]), 0o644)
	paths := []struct {
		rel   string
		isDir bool
	}{
		{"a.log", false}, {"keep.log", false}, {"sub/x.log", false}, {"sub/important.log", false},
		{"build", true}, {"sub/build", true}, {"dist", true}, {"sub/dist", true}, {"dist", false},
		{"#hash", false}, {"space ", false}, {"space", false},
		{"x/deep/a.tmp", false}, {"deep/a.tmp", false}, {"x/deep/y/a.tmp", false},
		{"doc/a.pdf", false}, {"doc/x/y/a.pdf", false}, {"x/doc/a.pdf", false},
		{"abc", false}, {"ac", false}, {"ax.txt", false}, {"cx.txt", false}, {"qy.txt", false}, {"ry.txt", false},
		{"foo/bar", false}, {"m.o", false}, {"m.o", true},
		{"sub/local.txt", false}, {"sub/deeper/local.txt", false}, {"sub/anchored.txt", false}, {"sub/deeper/anchored.txt", false},
		{"sub/nested/inner", false}, {"sub/x/nested/inner", false},
		{"secret.env", false}, {"excluded-by-info", false}, {"plain.go", false},
	}
	m := ignore.New(root, "")
	m.Load(root, "")
	m.Load(filepath.Join(root, "sub"), "sub")
	for _, p := range paths {
		if p.rel == "secret.env" {
			// .orionignore is Orion's own; git knows nothing of it.
			if !m.Ignored(p.rel, p.isDir) {
				t.Errorf("%s: not ignored, want ignored by .orionignore", p.rel)
			}
			continue
		}
		arg := p.rel
		if p.isDir {
			arg += "/"
		}
		cmd := exec.Command(git, "-C", root, "check-ignore", "-q", "--no-index", arg)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		err := cmd.Run()
		want := err == nil
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("git check-ignore %s: %v", arg, err)
		}
		if got := m.Ignored(p.rel, p.isDir); got != want {
			t.Errorf("%s (dir %v): ignored %v, git says %v", p.rel, p.isDir, got, want)
		}
	}
}

func TestGlobalFile(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "global")
	os.WriteFile(global, []byte("*.swp\n"), 0o644)
	m := ignore.New(dir, global)
	if !m.Ignored("a/b.swp", false) {
		t.Error("the global excludes file is not applied")
	}
	m.Load(dir, "")
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("!b.swp\n"), 0o644)
	m.Load(dir, "")
	if m.Ignored("a/b.swp", false) {
		t.Error("a .gitignore does not override the global file")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a/**/b[!x-z]\\*c?\n!d/\n")
	f.Fuzz(func(t *testing.T, s string) {
		rules := ignore.Parse(strings.NewReader(s), "")
		_ = rules
	})
}
