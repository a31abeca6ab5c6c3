//go:build unix

package confine_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
)

// A request's view keeps the directories it opened, but a directory
// swapped for a symlink after its first use is refused at the next one,
// as a fresh open refuses it: the kept descriptor is checked again.
func TestScopedRefusesASwapAfterFirstUse(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a request's view keeps directories only where /proc names them")
	}
	fsys, root, out := setup(t, pathguard.Protection{})
	view := fsys.Scoped()
	defer view.Close()
	work := filepath.Join(root, "sub")
	target := filepath.Join(work, "f.txt")

	d, name, err := view.OpenParent(target)
	if err != nil {
		t.Fatal(err)
	}
	d.Close() // kept by the view: the next step reuses it
	again, _, err := view.OpenParent(target)
	if err != nil {
		t.Fatal(err)
	}
	if again != d {
		t.Fatal("the view opened the directory again instead of keeping it")
	}

	// The directory goes, a symlink out of the root takes its name.
	if err := os.Rename(work, filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, work); err != nil {
		t.Fatal(err)
	}
	_, _, err = view.OpenParent(target)
	if got := reasonOf(err); got != pathguard.ReasonSymlinkEscape {
		t.Fatalf("OpenParent after the swap = %v (reason %q), want %s", err, got, pathguard.ReasonSymlinkEscape)
	}
	// An earlier step's descriptor still names the directory it opened,
	// not another one, until the request ends.
	if err := d.CheckWritable(name); err != nil {
		t.Fatalf("the first step's directory after the swap: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, name)); err == nil {
		t.Fatal("something was written outside the root")
	}
}

// A directory the view keeps is moved inside the root: the next use
// names the change instead of writing where the reply would not say.
func TestScopedRefusesAMovedDirectory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a request's view keeps directories only where /proc names them")
	}
	fsys, root, _ := setup(t, pathguard.Protection{})
	view := fsys.Scoped()
	defer view.Close()
	target := filepath.Join(root, "sub", "f.txt")
	if _, _, err := view.OpenParent(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "other")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, _, err := view.OpenParent(target)
	if err != nil {
		t.Fatal(err)
	}
	f, err := d.CreateExclusive("f.txt", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the file went elsewhere than %s: %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(root, "other", "f.txt")); err == nil {
		t.Fatal("the file went into the directory moved away")
	}
}

// The view's Close closes what it kept; the daemon's FS stays usable.
func TestScopedCloseReleasesItsDirectories(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a request's view keeps directories only where /proc names them")
	}
	fsys, root, _ := setup(t, pathguard.Protection{})
	view := fsys.Scoped()
	d, _, err := view.OpenParent(filepath.Join(root, "sub", "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := view.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lstat("x"); err == nil || os.IsNotExist(err) {
		t.Fatalf("Lstat through a directory of a closed view = %v, want a closed descriptor's error", err)
	}
	d2, _, err := fsys.OpenParent(filepath.Join(root, "sub", "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
}
