package confine_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/pathguard"
)

func TestMkdirAll(t *testing.T) {
	fsys, root, out := setup(t, pathguard.Protection{Default: []string{".git"}})
	if err := os.Symlink(out, filepath.Join(root, "esc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	made, err := fsys.MkdirAll(filepath.Join(root, "sub", "a", "b"))
	if want := []string{filepath.Join(root, "sub", "a"), filepath.Join(root, "sub", "a", "b")}; err != nil || !slices.Equal(made, want) {
		t.Fatalf("MkdirAll = %v, %v; want %v", made, err, want)
	}
	if made, err := fsys.MkdirAll(filepath.Join(root, "sub", "a", "b")); err != nil || len(made) != 0 {
		t.Fatalf("MkdirAll of an existing directory = %v, %v", made, err)
	}
	for _, tt := range []struct{ dir, reason string }{
		{filepath.Join(root, "esc", "new"), pathguard.ReasonSymlinkEscape},
		{filepath.Join(root, "file", "new"), pathguard.ReasonParentMissing},
		{filepath.Join(root, "p", ".git", "hooks"), pathguard.ReasonProtected},
	} {
		if made, err := fsys.MkdirAll(tt.dir); reasonOf(err) != tt.reason || len(made) != 0 {
			t.Errorf("MkdirAll(%s) = %v, %v; want reason %s and nothing made", tt.dir, made, err, tt.reason)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("MkdirAll made %v outside the root", entries)
	}
	if _, err := os.Stat(filepath.Join(root, "p")); err == nil {
		t.Fatal("MkdirAll made the parent of a protected directory before refusing")
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "a", "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	removed := fsys.RemoveEmptyDirs(made)
	if !slices.Equal(removed, []string{filepath.Join(root, "sub", "a", "b")}) {
		t.Fatalf("RemoveEmptyDirs = %v, want only the empty one", removed)
	}
}

// The git-partial rule is checked at the moment of use, through the
// roots' descriptors: a directory made when nothing marked a repository
// is refused once another piece stands beside it, nothing is made for a
// refused piece, and the directories a refused write made are removed
// although they are protected by then.
func TestGitPartialAtUse(t *testing.T) {
	fsys, root, _ := setup(t, pathguard.Protection{})
	tool := filepath.Join(root, "vendor", "tool")
	made, err := fsys.MkdirFor(filepath.Join(tool, "objects", "info", "packs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tool, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fsys.OpenParent(filepath.Join(tool, "objects", "info", "packs")); reasonOf(err) != pathguard.ReasonProtected {
		t.Fatalf("OpenParent beside HEAD = %v, want %s", err, pathguard.ReasonProtected)
	}
	if m, err := fsys.MkdirFor(filepath.Join(tool, "refs", "heads", "main")); reasonOf(err) != pathguard.ReasonProtected || len(m) != 0 {
		t.Fatalf("MkdirFor(refs/heads/main) beside HEAD = %v, %v; want %s and nothing made", m, err, pathguard.ReasonProtected)
	}
	if _, err := os.Stat(filepath.Join(tool, "refs")); err == nil {
		t.Fatal("refs/ was made for a refused write")
	}
	removed := fsys.RemoveEmptyDirs(made)
	if want := []string{filepath.Join(tool, "objects", "info"), filepath.Join(tool, "objects")}; !slices.Equal(removed, want) {
		t.Fatalf("RemoveEmptyDirs(%v) removed %v, want %v (vendor/tool holds HEAD)", made, removed, want)
	}
	if _, err := os.Stat(filepath.Join(tool, "objects")); err == nil {
		t.Fatal("objects/ is still there")
	}
	// Only HEAD is left: git does not take the directory for a repository.
	if entries, _ := os.ReadDir(tool); len(entries) != 1 {
		t.Fatalf("left in the directory: %v", entries)
	}
}

// A FIFO where a directory was (swapped in after the path was checked) is
// refused at once: opening it as a directory never waits for a writer,
// neither for the directory of a file nor for the directories the
// git-partial rule reads above it.
func TestFIFOForDirectoryNeverBlocks(t *testing.T) {
	fsys, root, _ := setup(t, pathguard.Protection{})
	fifo := filepath.Join(root, "sub", "tool")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 3)
	go func() {
		_, err := fsys.OpenDir(fifo)
		done <- err
		_, _, err = fsys.OpenParent(filepath.Join(fifo, "x.txt"))
		done <- err
		_, err = fsys.MkdirFor(filepath.Join(fifo, "objects", "info", "packs"))
		done <- err
	}()
	for i := 0; i < 3; i++ {
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("call %d through a FIFO succeeded", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("opening a FIFO as a directory blocked")
		}
	}
}
