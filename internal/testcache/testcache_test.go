package testcache_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testcache"
)

// Everything an install makes, staged or in place, is inside the one
// cache directory, named for what it holds.
func TestInstallsStayInTheCache(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := testcache.Dir()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dir, filepath.Join(os.TempDir(), "orion-test-cache"); got != want {
		t.Fatalf("Dir() = %s, want %s", got, want)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory: %v, %v; want 0700", fi, err)
	}
	staging, err := testcache.Staging("claude-code-1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(staging) != dir || !strings.HasPrefix(filepath.Base(staging), "claude-code-1.2.3.") {
		t.Fatalf("Staging = %s, want a directory of %s named for the install", staging, dir)
	}
	if p := testcache.Path("claude-code-1.2.3"); filepath.Dir(p) != dir {
		t.Fatalf("Path = %s, want it in %s", p, dir)
	}
	if err := os.Rename(staging, testcache.Path("claude-code-1.2.3")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(os.TempDir())
	if len(entries) != 1 || entries[0].Name() != "orion-test-cache" {
		t.Fatalf("the temp directory holds %v, want only orion-test-cache", entries)
	}
}
