package testdaemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// PublicDir returns a new directory of mode 0755 that every user can
// reach, removed when the test ends: for tests that run a process as
// another uid, which must run a copy of the test binary or reach a socket
// put there. The temporary directory may be private (a 0700 `mktemp -d`,
// macOS's per-user /var/folders/…/T/), so the directory is made under the
// first of os.TempDir() and /tmp that every user can enter; with neither,
// the test is skipped, saying why.
func PublicDir(t testing.TB) string {
	t.Helper()
	var why []string
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		if err := reachable(parent); err != nil {
			why = append(why, err.Error())
			continue
		}
		dir, err := os.MkdirTemp(parent, "orion-public")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Skipf("no directory another user can reach for this test: %v", why)
	return ""
}

// reachable says why another user cannot enter dir, or nil when it can:
// every directory on the way must let others search it.
func reachable(dir string) error {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is closed to other users (mode %v)", d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
