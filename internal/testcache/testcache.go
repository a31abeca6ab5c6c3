// Package testcache is where tests keep what they install from the
// network (real clients from npm, a browser) so that later runs reuse it:
// one directory, $TMPDIR/orion-test-cache, with a subdirectory per install
// named for what it holds and its version. Nothing else of a test run
// stays in the temporary directory. Removing the whole directory is always
// safe: the next run installs again (the README lists what it holds).
package testcache

import (
	"os"
	"path/filepath"
)

// Name is the cache directory's name in the temporary directory.
const Name = "orion-test-cache"

// Dir returns the cache directory, $TMPDIR/orion-test-cache, creating it
// (0700: it holds programs the tests run) if needed.
func Dir() (string, error) {
	dir := filepath.Join(os.TempDir(), Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// Path returns where the install called name lives in the cache (name
// says what it holds and its version, such as "claude-code-2.1.332"); it
// may not exist yet.
func Path(name string) string {
	return filepath.Join(os.TempDir(), Name, name)
}

// Staging returns a new empty directory in the cache to install name into:
// renamed to Path(name) once the install works, it leaves no half install
// under that name when a run is killed midway, and what such a run leaves
// stays inside the cache.
func Staging(name string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, name+".installing-")
}
