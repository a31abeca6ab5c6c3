// Package watch reports external changes to the target files of open
// sessions, so the daemon can mark a session in conflict instead of
// overwriting someone else's edit.
//
// It watches each target's directory, never the file itself: editors save by
// writing a temp file and renaming it over the target, which replaces the
// inode a file watch is attached to, and a target that does not exist yet has
// no inode to watch at all. Directories are refcounted, so many targets in
// one directory cost one watch. fsnotify does not coalesce events (one save
// can be a dozen of them), so events are debounced per path; when the kernel
// queue overflows, every watched path is reported as KindRescan, since any of
// them may have changed unseen.
package watch

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/orion-agent/orion/internal/clock"
)

// Kind says what happened to a watched path. The daemon reports it to the
// session's client, so the values are stable.
type Kind string

// Kinds of change. When a burst holds several, the reported kind describes
// the state the burst left behind: a create followed by writes is a create,
// a write followed by a remove is a remove, a rename away followed by a
// create is a create, and a rescan is never downgraded.
const (
	// KindWrite: the target's content was written in place.
	KindWrite Kind = "write"
	// KindCreate: a file was created at the target's path, or renamed over
	// it (an editor's atomic save).
	KindCreate Kind = "create"
	// KindRename: the target was moved away; nothing is at its path now,
	// unless something is created there later.
	KindRename Kind = "rename"
	// KindRemove: the target was deleted.
	KindRemove Kind = "remove"
	// KindRescan: events were lost (kernel queue overflow); the path may or
	// may not have changed and must be checked, e.g. by hash.
	KindRescan Kind = "rescan"
)

// Event is one debounced change to a watched path.
type Event struct {
	// Path is the target exactly as given to the Add that started watching
	// it, so the caller can compare it with its own records.
	Path string
	Kind Kind
}

// DefaultDebounce is the quiet time that ends a burst when
// Options.Debounce is zero.
const DefaultDebounce = 50 * time.Millisecond

// TempPrefix starts the names of the daemon's own temp files (see package
// atomicfile); events for them are ignored, since a temp file is never a
// target and its churn would otherwise be logged and debounced for nothing.
const TempPrefix = ".orion-tmp-"

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("watch: watcher closed")

// Options configures a Watcher. The zero value is ready to use.
type Options struct {
	// Debounce is how long a path must stay quiet before its burst of
	// events is reported as one Event; 0 means DefaultDebounce.
	Debounce time.Duration
	// MaxDelay bounds how long a burst is held back, so a file that is
	// written continuously is still reported; 0 means 10 × Debounce.
	MaxDelay time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Clock times the debounce; nil means real time. Tests pass a fake.
	Clock clock.Clock
}

// Watcher watches target files for changes made by others. Its methods are
// safe for concurrent use.
type Watcher struct {
	fsw      *fsnotify.Watcher
	onChange func(Event)
	debounce time.Duration
	maxDelay time.Duration
	log      *slog.Logger
	clock    clock.Clock

	// addMu serializes Add and Remove so that fsnotify is called without
	// holding mu, which the event loop needs to make progress.
	addMu sync.Mutex

	mu      sync.Mutex
	closed  bool
	targets map[string]*target // by cleaned path
	dirs    map[string]*dir    // by cleaned directory
	pending map[string]*burst  // by cleaned path: bursts being debounced
	queue   []delivery         // debounced events waiting for onChange
	nextGen uint64

	wake chan struct{} // a delivery was queued; capacity 1
	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// target is one watched path.
type target struct {
	path string // as given to Add, reported in Event.Path
	refs int
	// gen identifies this registration, so an event queued for an earlier
	// registration of the same path is not delivered to a later one.
	gen uint64
}

// dir is one watched directory and the base names of its targets.
type dir struct {
	names map[string]struct{}
}

// burst is a path's events waiting for the path to go quiet.
type burst struct {
	kind  Kind
	first time.Time
	timer clock.Timer
	gen   uint64
}

type delivery struct {
	ev  Event
	gen uint64
}

// New starts a Watcher that calls onChange for every debounced change to a
// watched path. onChange is called from one goroutine, one call at a time,
// in the order the bursts ended; it may call Add and Remove but must not
// call Close, which waits for it to return.
func New(onChange func(Event), opts Options) (*Watcher, error) {
	if onChange == nil {
		return nil, errors.New("watch: New needs an onChange function")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = 10 * opts.Debounce
	}
	if opts.MaxDelay < opts.Debounce {
		opts.MaxDelay = opts.Debounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: starting fsnotify: %w", err)
	}
	w := &Watcher{
		fsw:      fsw,
		onChange: onChange,
		debounce: opts.Debounce,
		maxDelay: opts.MaxDelay,
		log:      opts.Logger,
		clock:    opts.Clock,
		targets:  make(map[string]*target),
		dirs:     make(map[string]*dir),
		pending:  make(map[string]*burst),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	w.wg.Add(2)
	go w.readLoop()
	go w.deliverLoop()
	return w, nil
}

// Add starts watching path, an absolute file path that need not exist yet:
// its directory is watched, and must exist (the error wraps fs.ErrNotExist
// otherwise; the hash check at finalize still catches a change then).
// Adding a path already watched only counts one more reference; each Add
// needs its own Remove.
func (w *Watcher) Add(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("watch: %q is not an absolute path; pass the resolved target", path)
	}
	key := filepath.Clean(path)
	d, base := filepath.Split(key)
	d = filepath.Clean(d)
	if base == "" || key == d {
		return fmt.Errorf("watch: %q names a root directory, not a file", path)
	}

	w.addMu.Lock()
	defer w.addMu.Unlock()

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if t := w.targets[key]; t != nil {
		t.refs++
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()

	// Add the directory for every new target, even when it is already
	// watched: fsnotify treats that as a no-op, and it re-establishes a
	// watch the kernel dropped because the directory was deleted or moved.
	if err := w.fsw.Add(d); err != nil {
		if errors.Is(err, fsnotify.ErrClosed) {
			return ErrClosed
		}
		return fmt.Errorf("watch: watching directory %s for %s: %w", d, base, err)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	dd := w.dirs[d]
	if dd == nil {
		dd = &dir{names: make(map[string]struct{})}
		w.dirs[d] = dd
	}
	dd.names[base] = struct{}{}
	w.nextGen++
	w.targets[key] = &target{path: path, refs: 1, gen: w.nextGen}
	return nil
}

// Remove drops one reference to path; the last one stops watching it. From
// then on no change to path is reported, and a burst being debounced is
// dropped; only a callback already handed to onChange may still be running.
// The daemon relies on this to ignore its own writes: it removes the path
// before renaming its new content into place. While another reference
// remains (a second session on the same target) that write is reported, as
// it should be: it changes the target under the other session. Removing a
// path that is not watched does nothing.
func (w *Watcher) Remove(path string) {
	key := filepath.Clean(path)
	d, base := filepath.Split(key)
	d = filepath.Clean(d)

	w.addMu.Lock()
	defer w.addMu.Unlock()

	w.mu.Lock()
	t := w.targets[key]
	if t == nil {
		w.mu.Unlock()
		return
	}
	t.refs--
	if t.refs > 0 {
		w.mu.Unlock()
		return
	}
	delete(w.targets, key)
	if b := w.pending[key]; b != nil {
		b.timer.Stop()
		delete(w.pending, key)
	}
	last := false
	if dd := w.dirs[d]; dd != nil {
		delete(dd.names, base)
		if len(dd.names) == 0 {
			delete(w.dirs, d)
			last = true
		}
	}
	closed := w.closed
	w.mu.Unlock()

	if last && !closed {
		// The kernel may already have dropped the watch with the directory.
		if err := w.fsw.Remove(d); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
			w.log.Debug("removing directory watch", "dir", d, "err", err)
		}
	}
}

// Close stops watching and waits until no callback is running; after it
// returns onChange is not called again. It must not be called from
// onChange.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	for _, b := range w.pending {
		b.timer.Stop()
	}
	w.pending = nil
	w.queue = nil
	w.mu.Unlock()

	close(w.done)
	err := w.fsw.Close()
	w.wg.Wait()
	return err
}
