package pathguard_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/pathguard"
)

// A directory holding one piece that marks a repository refuses every
// other piece, whatever the order they come in, so no sequence of writes
// assembles one; the piece it holds, and ordinary files, stay writable.
func TestGitPartial(t *testing.T) {
	pieces := []string{"HEAD", "config", "packed-refs", "commondir", "objects/info/packs", "refs/heads/main", "hooks/pre-commit", "info/exclude"}
	markers := map[string]func(dir string) error{
		"HEAD": func(d string) error {
			return os.WriteFile(filepath.Join(d, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		},
		"config": func(d string) error {
			return os.WriteFile(filepath.Join(d, "config"), []byte("[Core]\n\tpager = sh -c x\n"), 0o644)
		},
		"packed-refs": func(d string) error { return os.WriteFile(filepath.Join(d, "packed-refs"), nil, 0o644) },
		"commondir":   func(d string) error { return os.WriteFile(filepath.Join(d, "commondir"), []byte("..\n"), 0o644) },
		"objects":     func(d string) error { return os.Mkdir(filepath.Join(d, "objects"), 0o755) },
		"refs":        func(d string) error { return os.Mkdir(filepath.Join(d, "refs"), 0o755) },
	}
	for marker, put := range markers {
		t.Run(marker, func(t *testing.T) {
			root, g := partialRoot(t, pathguard.Protection{})
			dir := filepath.Join(root, "vendor", "tool")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := put(dir); err != nil {
				t.Fatal(err)
			}
			for _, p := range pieces {
				path := filepath.Join(dir, filepath.FromSlash(p))
				_, err := g.Resolve(path, "")
				first, _, _ := strings.Cut(p, "/")
				if first == marker {
					if err != nil && !isReason(err, pathguard.ReasonIsDirectory) {
						t.Errorf("holding %s, writing %s again: %v, want it allowed", marker, p, err)
					}
					continue
				}
				var pe *pathguard.Error
				if !errors.As(err, &pe) || pe.Reason != pathguard.ReasonProtected || pe.Rule != pathguard.RuleGitPartial {
					t.Errorf("holding %s, writing %s: %v, want %s (rule %s)", marker, p, err, pathguard.ReasonProtected, pathguard.RuleGitPartial)
					continue
				}
				if !strings.Contains(pe.Msg, "--allow-protected "+dir) {
					t.Errorf("message %q does not say how to allow the directory", pe.Msg)
				}
				// Named in any case: on a case-insensitive file system
				// "Refs" is refs.
				upper := filepath.Join(dir, strings.ToUpper(p[:1])+p[1:])
				if _, err := g.Resolve(upper, ""); !isReason(err, pathguard.ReasonProtected) {
					t.Errorf("holding %s, writing %s: %v, want %s", marker, upper, err, pathguard.ReasonProtected)
				}
			}
			for _, ok := range []string{"README.md", "src/main.go", "config.yml", "vendor.json"} {
				if _, err := g.Resolve(filepath.Join(dir, ok), ""); err != nil {
					t.Errorf("holding %s, writing %s: %v, want it allowed", marker, ok, err)
				}
			}
		})
	}
}

// What marks nothing: an empty directory, hooks/ or info/ alone, a config
// without a [core] section, a config/ directory.
func TestGitPartialNotMarked(t *testing.T) {
	root, g := partialRoot(t, pathguard.Protection{})
	for dir, setup := range map[string]func(string) error{
		"empty": func(string) error { return nil },
		"hooks": func(d string) error { return os.Mkdir(filepath.Join(d, "hooks"), 0o755) },
		"info":  func(d string) error { return os.Mkdir(filepath.Join(d, "info"), 0o755) },
		"aliasonly": func(d string) error {
			return os.WriteFile(filepath.Join(d, "config"), []byte("[alias]\n\tst = status\n"), 0o644)
		},
		"configdir": func(d string) error { return os.Mkdir(filepath.Join(d, "config"), 0o755) },
	} {
		d := filepath.Join(root, dir)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := setup(d); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"HEAD", "objects/x", "refs/heads/main"} {
			if _, err := g.Resolve(filepath.Join(d, filepath.FromSlash(p)), ""); err != nil {
				t.Errorf("%s: writing %s: %v, want it allowed", dir, p, err)
			}
		}
	}
}

// The person lifts the rule by the directory or the file; a root that is
// the directory itself lifts nothing, or a model could make the home
// directory (the default root), where git looks last from every directory
// below, into a repository.
func TestGitPartialLifted(t *testing.T) {
	root, g := partialRoot(t, pathguard.Protection{})
	if err := os.WriteFile(filepath.Join(root, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "objects", "info", "packs")
	if _, err := g.Resolve(target, ""); !isReason(err, pathguard.ReasonProtected) {
		t.Fatalf("objects/ beside HEAD at the top of the root: %v, want %s", err, pathguard.ReasonProtected)
	}
	for _, allowed := range []string{root, filepath.Join(root, "objects"), target} {
		lifted, err := pathguard.NewProtected([]string{root}, pathguard.Protection{Allowed: []string{allowed}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lifted.Resolve(target, ""); err != nil {
			t.Errorf("--allow-protected %s: %v", allowed, err)
		}
	}
}

// Where a directory cannot be read, the check through descriptors refuses
// instead of guessing.
func TestGitPartialFailsClosed(t *testing.T) {
	root, g := partialRoot(t, pathguard.Protection{})
	boom := errors.New("cannot read")
	err := g.CheckProtectedIn(filepath.Join(root, "t", "HEAD"), func(string) (pathguard.DirReader, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("CheckProtectedIn with an unreadable directory = %v, want the read error", err)
	}
	if err := g.CheckProtectedIn(filepath.Join(root, "t", "main.go"), func(string) (pathguard.DirReader, error) { return nil, boom }); err != nil {
		t.Fatalf("a path with no piece read a directory: %v", err)
	}
}

func partialRoot(t *testing.T, p pathguard.Protection) (string, *pathguard.Guard) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err := pathguard.NewProtected([]string{root}, p)
	if err != nil {
		t.Fatal(err)
	}
	return root, g
}

// A FIFO where a directory of the path should be is never waited on: the
// check answers at once.
func TestGitPartialFIFONeverBlocks(t *testing.T) {
	root, g := partialRoot(t, pathguard.Protection{})
	fifo := filepath.Join(root, "tool")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Protected(filepath.Join(fifo, "HEAD"))
		g.Resolve(filepath.Join(fifo, "objects", "x"), "")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the check of a path through a FIFO blocked")
	}
}

// In one request's scope the rules read by path answer each later check of
// a path as they did the first, but the git-partial rule reads its
// directory through the caller at every check: a marker put there between
// two checks of the same request refuses the second.
func TestScopedCheckReadsGitPartialEachTime(t *testing.T) {
	root, g := partialRoot(t, pathguard.Protection{Default: []string{".git"}})
	dir := filepath.Join(root, "tool")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	reads := 0
	open := func(d string) (pathguard.DirReader, error) {
		reads++
		return osDir(d), nil
	}
	scope := pathguard.NewScope()
	target := filepath.Join(dir, "HEAD")
	for i := range 2 {
		if err := g.CheckProtectedScoped(scope, target, open); err != nil {
			t.Fatalf("check %d of %s before any marker: %v", i+1, target, err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := g.CheckProtectedScoped(scope, target, open)
	var pe *pathguard.Error
	if !errors.As(err, &pe) || pe.Rule != pathguard.RuleGitPartial {
		t.Fatalf("check of %s once its directory holds objects/, refs/ and a config: %v, want rule %s", target, err, pathguard.RuleGitPartial)
	}
	if reads != 3 {
		t.Errorf("the directory was read %d times for three checks, want 3", reads)
	}
	// A path refused by a rule read by path is refused again, by the same
	// rule, when the scope answers from what it kept.
	git := filepath.Join(root, "repo", ".git", "config")
	for i := range 2 {
		err := g.CheckProtectedScoped(scope, git, open)
		if !errors.As(err, &pe) || pe.Rule != pathguard.RuleGitName {
			t.Fatalf("check %d of %s: %v, want rule %s", i+1, git, err, pathguard.RuleGitName)
		}
	}
}

// osDir reads a directory by path, for the rules that take a DirReader.
type osDir string

func (d osDir) Lstat(name string) (fs.FileMode, error) {
	fi, err := os.Lstat(filepath.Join(string(d), name))
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

func (d osDir) ReadHead(name string, n int) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(string(d), name))
	if len(b) > n {
		b = b[:n]
	}
	return b, err
}

func (osDir) Close() error { return nil }
