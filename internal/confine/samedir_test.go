//go:build unix

package confine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
)

// A directory held open tells whether its path still leads to it: not
// once it moved, and another directory made at its path is not it.
func TestDirStillAtAndSameAs(t *testing.T) {
	fsys, root, _ := setup(t, pathguard.Protection{})
	sub := filepath.Join(root, "sub")
	open := func() *confine.Dir {
		t.Helper()
		d, err := fsys.OpenDir(sub)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	held, again := open(), open()
	if still, known := held.StillAt(); known && !still {
		t.Error("a directory that did not move says it is not at its path")
	}
	if !held.SameAs(again) {
		t.Error("one directory opened twice is not the same")
	}
	if err := os.Rename(sub, filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if still, known := held.StillAt(); known && still {
		t.Error("a directory that moved says it is still at its path")
	}
	if held.SameAs(open()) {
		t.Error("the directory made at the path of one that moved is the same as it")
	}
}
