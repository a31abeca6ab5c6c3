package confine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
)

// A view confined to a workspace opens only what lies in it, at the moment
// of use: a path outside it, even inside the root, is refused, and so is a
// directory of the workspace swapped for a symlink that leads out of it
// after the path was checked. Nothing outside the workspace is made.
func TestWithinWorkspace(t *testing.T) { bothWays(t, testWithinWorkspace) }

func testWithinWorkspace(t *testing.T) {
	fsys, root, _ := setup(t, pathguard.Protection{})
	ws := filepath.Join(root, "ws")
	for _, d := range []string{filepath.Join(ws, "src"), filepath.Join(root, "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	view := fsys.Within(ws)

	d, name, err := view.OpenParent(filepath.Join(ws, "src", "a.go"))
	if err != nil {
		t.Fatalf("inside the workspace: %v", err)
	}
	if d.Path != filepath.Join(ws, "src") || name != "a.go" {
		t.Errorf("OpenParent = %s, %s", d.Path, name)
	}
	d.Close()

	if _, _, err := view.OpenParent(filepath.Join(root, "other", "x")); reasonOf(err) != pathguard.ReasonOutsideWorkspace {
		t.Errorf("outside the workspace, inside the root: %v, want %s", err, pathguard.ReasonOutsideWorkspace)
	}
	if _, err := view.MkdirAll(filepath.Join(root, "other", "new")); reasonOf(err) != pathguard.ReasonOutsideWorkspace {
		t.Errorf("MkdirAll outside the workspace: %v, want %s", err, pathguard.ReasonOutsideWorkspace)
	}
	if _, err := os.Stat(filepath.Join(root, "other", "new")); err == nil {
		t.Error("MkdirAll made a directory outside the workspace")
	}

	// src, checked as a directory of the workspace, becomes a symlink to
	// a directory of the root outside the workspace.
	if err := os.Rename(filepath.Join(ws, "src"), filepath.Join(root, "src.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "other"), filepath.Join(ws, "src")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := view.OpenParent(filepath.Join(ws, "src", "a.go")); reasonOf(err) != pathguard.ReasonOutsideWorkspace {
		t.Errorf("through a symlink swapped in: %v, want %s", err, pathguard.ReasonOutsideWorkspace)
	}
	// The unconfined FS follows it (it stays in the root) but sees the
	// change on Linux; either way the view refused first.
	if err := view.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fsys.OpenParent(filepath.Join(root, "other", "x")); err != nil {
		t.Fatalf("closing a view closed its parent's roots: %v", err)
	}
}
