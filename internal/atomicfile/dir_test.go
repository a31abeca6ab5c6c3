package atomicfile_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
)

// openDir opens dir through a confine.FS rooted at dir itself, as the
// daemon opens a target's directory inside its root.
func openDir(t testing.TB, dir string) *confine.Dir {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pathguard.New([]string{real})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := confine.New(g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	d, err := fs.OpenDir(real)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// The path-taking helpers keep the table tests readable; the package
// itself only takes a directory and a name.

func write(t testing.TB, path string, opts atomicfile.Options, fill func(io.Writer) error) (atomicfile.Result, error) {
	return atomicfile.Write(openDir(t, filepath.Dir(path)), filepath.Base(path), opts, fill)
}

func stage(t testing.TB, path string, opts atomicfile.Options, fill func(io.Writer) error) (*atomicfile.Staged, error) {
	return atomicfile.Stage(openDir(t, filepath.Dir(path)), filepath.Base(path), opts, fill)
}

func cleanTemp(t testing.TB, dir, tag string) ([]string, error) {
	return atomicfile.CleanTemp(openDir(t, dir), tag)
}
