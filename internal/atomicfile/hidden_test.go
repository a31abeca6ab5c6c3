package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
)

// stageHidden stages content for path with StageHidden, skipping the test
// where the file system has no unnamed files.
func stageHidden(t *testing.T, path string, opts atomicfile.Options, s string) *atomicfile.Staged {
	t.Helper()
	st, err := atomicfile.StageHidden(openDir(t, filepath.Dir(path)), filepath.Base(path), opts, content(s))
	if errors.Is(err, atomicfile.ErrNoHidden) {
		t.Skipf("no unnamed files here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStageHidden: a hidden stage leaves nothing in the directory until
// Commit, which puts the content in place as Stage's Commit does, and a
// discard leaves nothing at all.
func TestStageHidden(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeFile(t, a, "old a\n", 0o640)

	sa := stageHidden(t, a, atomicfile.Options{Tag: "s1"}, "new a\n")
	sb := stageHidden(t, b, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "s2"}, "new b\n")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "a.txt" {
		t.Fatalf("the directory holds %v (%v) while staged, want only a.txt", entries, err)
	}
	checkFile(t, a, "old a\n", 0o640)
	res, err := sa.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 6 || res.Mode != 0o640 {
		t.Errorf("commit result %+v", res)
	}
	checkFile(t, a, "new a\n", 0o640)
	sb.Discard()
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b exists after discard: %v", err)
	}
	noTemp(t, dir)

	// A CreateNew whose target appeared meanwhile fails at Commit and
	// keeps the file that appeared.
	sc := stageHidden(t, b, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "s3"}, "mine\n")
	writeFile(t, b, "theirs\n", 0o644)
	if _, err := sc.Commit(); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("Commit = %v, want ErrExists", err)
	}
	checkFile(t, b, "theirs\n", 0o644)
	noTemp(t, dir)

	// A CreateNew whose target is still absent is linked in place: no
	// temp name, nothing left beside it.
	c := filepath.Join(dir, "c.txt")
	sd := stageHidden(t, c, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "s4"}, "new c\n")
	if res, err := sd.Commit(); err != nil || res.Bytes != 6 {
		t.Fatalf("Commit = %+v, %v", res, err)
	}
	checkFile(t, c, "new c\n", 0o644)
	noTemp(t, dir)
}
