// Package filepairs is the tests' corpus of real file pairs: 71 Go source
// files of golang.org/x/sys at two versions (README.md gives the source and
// its licence). The diff, merge and session tests all read it, so it is
// loaded in one place.
package filepairs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"io"
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
