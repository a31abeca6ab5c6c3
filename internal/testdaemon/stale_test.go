package testdaemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestRemoveStale: the next run removes the build directory of a test
// process that is gone and old ones named without a process id, and keeps
// those of running processes, fresh ones and everything else.
func TestRemoveStale(t *testing.T) {
	tmp := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	dirs := map[string]bool{ // name: removed
		binPrefix + strconv.Itoa(gone.Process.Pid) + "-123": true,
		binPrefix + strconv.Itoa(os.Getpid()) + "-456":      false,
		"oriond-bin987654":         true,
		"oriond-bin111111":         false, // fresh
		"oriond-binary-of-someone": false,
		"orion12345":               false,
	}
	for name := range dirs {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "oriond"), []byte("binary"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-legacyAge - time.Minute)
	if err := os.Chtimes(filepath.Join(tmp, "oriond-bin987654"), old, old); err != nil {
		t.Fatal(err)
	}
	removeStale(tmp, now)
	for name, removed := range dirs {
		_, err := os.Stat(filepath.Join(tmp, name))
		if got := os.IsNotExist(err); got != removed {
			t.Errorf("%s: removed %v, want %v (%v)", name, got, removed, err)
		}
	}
}
