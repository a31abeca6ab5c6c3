package confine_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
)

// A file made without a name gets one in its directory, by its
// descriptor where the kernel allows it and through /proc otherwise; a
// name already taken is refused either way and keeps what it holds.
func TestLinkUnnamed(t *testing.T) {
	for _, c := range []struct {
		name        string
		throughProc bool
	}{{"ByDescriptor", false}, {"ThroughProc", true}} {
		t.Run(c.name, func(t *testing.T) {
			if c.throughProc {
				confine.LinkThroughProc(t)
			}
			fsys, root, _ := setup(t, pathguard.Protection{})
			d, err := fsys.OpenDir(root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := os.WriteFile(filepath.Join(root, "taken"), []byte("theirs\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := createUnnamed(t, d)
			if _, err := f.WriteString("mine\n"); err != nil {
				t.Fatal(err)
			}
			if err := d.LinkUnnamed(f, "taken"); !errors.Is(err, fs.ErrExist) {
				t.Errorf("link over a taken name: %v, want ErrExist", err)
			}
			if err := d.LinkUnnamed(f, "new"); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"new": "mine\n", "taken": "theirs\n"} {
				if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != want {
					t.Errorf("%s: %q, %v; want %q", name, got, err, want)
				}
			}
		})
	}
}

// A link that fails for its target's sake (its directory was removed
// meanwhile) says so, and does not stop later files from being linked by
// their descriptor, which a kernel that allows it allows them all.
func TestLinkUnnamedIntoRemovedDirectory(t *testing.T) {
	confine.KeepLinkWay(t)
	fsys, root, _ := setup(t, pathguard.Protection{})
	link := func(dir string) error {
		t.Helper()
		d, err := fsys.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		f := createUnnamed(t, d)
		if dir != root {
			// Gone, while the file made in it waits for its name.
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
		}
		return d.LinkUnnamed(f, "f")
	}
	if err := link(root); err != nil {
		t.Fatal(err)
	}
	if !confine.LinksByDescriptor() {
		t.Skip("this kernel links unnamed files by their descriptor only with a privilege the test lacks")
	}
	gone := filepath.Join(root, "sub")
	if err := link(gone); err == nil {
		t.Fatal("a file was linked into a removed directory")
	}
	if !confine.LinksByDescriptor() {
		t.Error("after a link into a removed directory failed, files are no longer linked by their descriptor")
	}
}

// createUnnamed makes a file without a name in d, closed when the test
// ends, and skips the test where the file system cannot.
func createUnnamed(t *testing.T, d *confine.Dir) *os.File {
	t.Helper()
	f, err := d.CreateUnnamed(0o600)
	if errors.Is(err, confine.ErrNoUnnamed) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
