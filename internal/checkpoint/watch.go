package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// Why a workspace's next checkpoint scans everything.
const (
	reasonOverflow   = "overflow"
	reasonWatchLimit = "watch_limit"
	reasonRestart    = "restart"
	reasonNoWatcher  = "no_watcher"
	reasonIgnore     = "ignore_changed"
	reasonSyncLost   = "sync_timeout"
)

// watcher records which directories of a workspace changed between two
// checkpoints: one fsnotify watch per directory. What it cannot see (the
// kernel's queue overflowed, more directories changed than it keeps, a
// watch could not be added) turns into one full scan against the stat
// cache, and it says why.
type watcher struct {
	w        *fsnotify.Watcher
	root     string
	syncDir  string
	maxDirty int

	mu      sync.Mutex
	dirty   map[string]bool // absolute directories
	watched map[string]bool
	full    string // reason of the next full scan, "" for none
	limited bool   // a watch could not be added: scanning until restart
	syncs   map[string]chan struct{}
	seq     int
	done    chan struct{}
}

func newWatcher(root, syncDir string, maxDirty int) (*watcher, error) {
	// A daemon killed during a sync leaves its file behind; creating it
	// again under the same name raises no event, so every first sync after
	// the restart would wait out its timeout and force a full scan.
	if err := os.RemoveAll(syncDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(syncDir, 0o700); err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(syncDir); err != nil {
		fw.Close()
		return nil, err
	}
	w := &watcher{w: fw, root: root, syncDir: syncDir, maxDirty: maxDirty, dirty: map[string]bool{},
		watched: map[string]bool{}, syncs: map[string]chan struct{}{}, done: make(chan struct{})}
	go w.loop()
	return w, nil
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.mu.Lock()
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.full = reasonOverflow
			} else if w.full == "" {
				w.full = reasonOverflow
			}
			w.mu.Unlock()
		}
	}
}

func (w *watcher) event(ev fsnotify.Event) {
	dir := filepath.Dir(ev.Name)
	w.mu.Lock()
	defer w.mu.Unlock()
	if dir == w.syncDir {
		if ch := w.syncs[ev.Name]; ch != nil {
			delete(w.syncs, ev.Name)
			close(ch)
		}
		return
	}
	w.dirty[dir] = true
	if ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
		// A watched directory removed or moved away: its parent's scan
		// sees it gone; its watch is gone with it.
		delete(w.watched, ev.Name)
	}
	if len(w.dirty) > w.maxDirty {
		// Bounded memory: past this, a full scan costs less than the list.
		w.dirty = map[string]bool{}
		w.full = reasonOverflow
	}
}

// watch adds a watch on dir if it has none.
func (w *watcher) watch(dir string) {
	w.mu.Lock()
	if w.watched[dir] || w.limited {
		w.mu.Unlock()
		return
	}
	w.watched[dir] = true
	w.mu.Unlock()
	if err := w.w.Add(dir); err != nil {
		w.mu.Lock()
		delete(w.watched, dir)
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EMFILE) {
			w.limited = true
		}
		w.mu.Unlock()
	}
}

// sync waits until every event queued before it was read, by creating a
// file in the watched sync directory and waiting for its event: the kernel
// delivers one watcher's events in order. It reports false on a timeout.
func (w *watcher) sync(timeout time.Duration) bool {
	w.mu.Lock()
	w.seq++
	name := filepath.Join(w.syncDir, "sync-"+strconv.Itoa(w.seq))
	ch := make(chan struct{})
	w.syncs[name] = ch
	w.mu.Unlock()
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	defer os.Remove(name)
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		w.mu.Lock()
		delete(w.syncs, name)
		w.mu.Unlock()
		return false
	}
}

// take returns the directories changed since the last take and, when the
// next checkpoint must scan everything, why; and resets both.
func (w *watcher) take() (dirs []string, full string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := range w.dirty {
		dirs = append(dirs, d)
	}
	w.dirty = map[string]bool{}
	full = w.full
	w.full = ""
	if w.limited && full == "" {
		full = reasonWatchLimit
	}
	return dirs, full
}

// state says whether the watcher sees everything, and if not, why.
func (w *watcher) state() (watches int, limited bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched), w.limited
}

func (w *watcher) close() {
	w.w.Close()
	<-w.done
}
