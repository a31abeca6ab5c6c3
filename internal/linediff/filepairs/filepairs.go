// Package filepairs is the tests' corpus of real file pairs: 71 Go source
// files of golang.org/x/sys at two versions (README.md gives the source and
// its licence), and git's three-way merge, the reference the merge and
// session tests hold their merges of it to. The diff, merge and session
// tests all read it, so it is in one place.
package filepairs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

//go:embed xsys-pairs.tar.gz
var archive []byte

// Pair is one file at two versions.
type Pair struct {
	Name     string
	Old, New []byte
}

// Load returns every pair, sorted by name.
func Load(t testing.TB) []Pair {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	old, new := map[string][]byte{}, map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 4<<20))
		if err != nil {
			t.Fatal(err)
		}
		if name, ok := strings.CutPrefix(h.Name, "old/"); ok {
			old[name] = b
		} else if name, ok := strings.CutPrefix(h.Name, "new/"); ok {
			new[name] = b
		}
	}
	ps := make([]Pair, 0, len(old))
	for name, o := range old {
		ps = append(ps, Pair{name, o, new[name]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// GitMergeFile runs `git merge-file -p ours base theirs` in dir: its output
// and whether it merged without conflict.
func GitMergeFile(t testing.TB, dir string, base, ours, theirs []byte) ([]byte, bool) {
	t.Helper()
	names := []string{"ours", "base", "theirs"}
	for i, b := range [][]byte{ours, base, theirs} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "merge-file", "-p", "ours", "base", "theirs")
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out, true
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 127:
		return out, false // the exit code is the number of conflicts
	}
	t.Fatalf("git merge-file: %v", err)
	return nil, false
}
