package confine_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
)

// setup makes root/ (the allowed root, with root/sub) and out/ beside it.
func setup(t *testing.T, p pathguard.Protection) (fsys *confine.FS, root, out string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, out = filepath.Join(base, "root"), filepath.Join(base, "out")
	for _, d := range []string{root, out, filepath.Join(root, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g, err := pathguard.NewProtected([]string{root}, p)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err = confine.New(g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys, root, out
}

func reasonOf(err error) string {
	var pe *pathguard.Error
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}

// Every directory is opened with os.Root's confinement, by openat2 where
// the kernel has it and by os.Root where it has not: the same answers.
func TestOpenDir(t *testing.T) { bothWays(t, testOpenDir) }

// bothWays runs test with directories opened by openat2, then by os.Root
// (where openat2 was the way: else the first run was os.Root's already).
func bothWays(t *testing.T, test func(*testing.T)) {
	t.Run("openat2", test)
	t.Run("os.Root", func(t *testing.T) {
		if !confine.ThroughOSRoot(t) {
			t.Skip("os.Root is the only way here, tested above")
		}
		test(t)
	})
}

func testOpenDir(t *testing.T) {
	fsys, root, out := setup(t, pathguard.Protection{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(out, filepath.Join(root, "escape")))
	must(os.Symlink("sub", filepath.Join(root, "inside")))
	must(os.Symlink("../out", filepath.Join(root, "up")))
	must(os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "absolute")))
	must(os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	tests := []struct {
		name, dir, reason string
		linuxOnly         bool
	}{
		{name: "OK", dir: filepath.Join(root, "sub")},
		{name: "Root", dir: root},
		{name: "OutsideRoots", dir: out, reason: pathguard.ReasonOutsideRoots},
		{name: "SymlinkEscape", dir: filepath.Join(root, "escape"), reason: pathguard.ReasonSymlinkEscape},
		{name: "RelativeSymlinkEscape", dir: filepath.Join(root, "up"), reason: pathguard.ReasonSymlinkEscape},
		// As os.Root: a symlink must not be absolute, even to a place
		// inside the root.
		{name: "AbsoluteSymlinkInside", dir: filepath.Join(root, "absolute"), reason: pathguard.ReasonSymlinkEscape},
		{name: "ThroughSymlinkEscape", dir: filepath.Join(root, "escape", "x"), reason: pathguard.ReasonSymlinkEscape},
		{name: "RedirectedInsideRoot", dir: filepath.Join(root, "inside"), reason: pathguard.ReasonPathChanged, linuxOnly: true},
		{name: "Missing", dir: filepath.Join(root, "nope"), reason: pathguard.ReasonParentMissing},
		{name: "NotADirectory", dir: filepath.Join(root, "file"), reason: pathguard.ReasonParentMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.linuxOnly && runtime.GOOS != "linux" {
				t.Skip("needs /proc to name an open directory")
			}
			d, err := fsys.OpenDir(tt.dir)
			if d != nil {
				d.Close()
			}
			if got := reasonOf(err); got != tt.reason || (tt.reason == "" && err != nil) {
				t.Fatalf("OpenDir(%s) = %v (reason %q), want reason %q", tt.dir, err, got, tt.reason)
			}
		})
	}
}

func TestOpenParentProtectedFile(t *testing.T) {
	_, root, _ := setup(t, pathguard.Protection{})
	g, err := pathguard.NewProtected([]string{root}, pathguard.Protection{Always: []string{filepath.Join(root, "sub", "oriond.toml")}})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := confine.New(g)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if _, _, err := f2.OpenParent(filepath.Join(root, "sub", "oriond.toml")); reasonOf(err) != pathguard.ReasonProtected {
		t.Fatalf("OpenParent of a protected file: %v, want %s", err, pathguard.ReasonProtected)
	}
	d, name, err := f2.OpenParent(filepath.Join(root, "sub", "other.toml"))
	if err != nil {
		t.Fatalf("OpenParent of its neighbour: %v", err)
	}
	d.Close()
	if name != "other.toml" {
		t.Fatalf("name = %q", name)
	}
}

// OpenRegular never blocks on, or reads from, anything but a regular file.
func TestOpenRegular(t *testing.T) {
	fsys, root, out := setup(t, pathguard.Protection{})
	sub := filepath.Join(root, "sub")
	if err := os.WriteFile(filepath.Join(sub, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sub, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "secret"), filepath.Join(sub, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sub, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := fsys.OpenDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tests := []struct {
		name, reason string
		notExist     bool
	}{
		{name: "file"},
		{name: "fifo", reason: pathguard.ReasonSpecialFile},
		{name: "link", reason: pathguard.ReasonPathChanged},
		{name: "dir", reason: pathguard.ReasonIsDirectory},
		{name: "missing", notExist: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, err := d.OpenRegular(tt.name)
				if f != nil {
					f.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("OpenRegular blocked")
			}
			switch {
			case tt.notExist:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("err = %v, want not-exist", err)
				}
			case reasonOf(err) != tt.reason || (tt.reason == "" && err != nil):
				t.Fatalf("err = %v, want reason %q", err, tt.reason)
			}
		})
	}
}

// TestLinkNoReplace covers the fallback used where renameat2 or
// renameatx_np is unsupported.
func TestLinkNoReplace(t *testing.T) {
	for _, existing := range []bool{false, true} {
		fsys, root, _ := setup(t, pathguard.Protection{})
		if err := os.WriteFile(filepath.Join(root, "tmp"), []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		if existing {
			if err := os.WriteFile(filepath.Join(root, "f"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d, err := fsys.OpenDir(root)
		if err != nil {
			t.Fatal(err)
		}
		err = d.LinkNoReplace("tmp", "f")
		d.Close()
		got, _ := os.ReadFile(filepath.Join(root, "f"))
		if existing {
			if !errors.Is(err, fs.ErrExist) || string(got) != "old" {
				t.Fatalf("over an existing file: err %v, content %q", err, got)
			}
			continue
		}
		if err != nil || string(got) != "new" {
			t.Fatalf("err %v, content %q", err, got)
		}
		if _, err := os.Lstat(filepath.Join(root, "tmp")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("old name still there: %v", err)
		}
	}
}
