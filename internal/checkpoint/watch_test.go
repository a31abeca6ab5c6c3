package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSyncAfterACrashLeftItsFile: a daemon killed in the middle of a sync
// leaves sync-1 in the sync directory. The next daemon's watcher must
// still see its own first sync, not time out and force a full scan of the
// workspace at the first checkpoint of every workspace after each crash.
func TestSyncAfterACrashLeftItsFile(t *testing.T) {
	root := t.TempDir()
	syncDir := filepath.Join(t.TempDir(), "checkpoint-sync", "ws")
	if err := os.MkdirAll(syncDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(syncDir, "sync-1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := newWatcher(root, syncDir, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// The timeout only bounds a broken run; a working sync returns at
	// once.
	if !w.sync(30 * time.Second) {
		t.Fatal("the first sync after a crash's leftover sync file was never seen")
	}
}
