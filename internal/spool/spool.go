// Package spool imports session directories that a client left in the
// recovery spool because it crashed, or could not reach the daemon, before
// it could hand them over.
//
// An entry is a directory in this layout, in which a client saves a write
// it has not handed over yet:
//
//	<spool>/<id>/metadata.json  {"intent", "target_file", "operation", "created_at"[, "workspace_root"]}
//	<spool>/<id>/content.txt    the content streamed so far, raw
//	<spool>/<id>/state.json     optional: {"buffer_size", "last_save", "line_count"}
//
// A Spool imports every complete entry, present at start or appearing
// later, through a caller's function, then moves it to <spool>/.imported/<id>
// so it is never imported twice and never lost. Entries it cannot import are
// reported once and left exactly as they are: the content in them may be the
// only copy of a model's work.
//
// # When an entry is complete
//
// A writer may create the directory first and its files over seconds, so an
// entry is looked at only once it has settled: the existence, size and
// modification time of the directory, metadata.json, content.txt and
// state.json have not changed for Options.Settle, as observed by the Spool.
// Entries present at start are therefore imported Settle after start, not
// at once. Only a settled entry is parsed; one that is still missing a file
// then is reported (missing_metadata, missing_content) but stays watched, and
// is imported if the file appears later. Writers that want no such window
// should build an entry under a name starting with "." (ignored) and rename
// it into place when it is whole.
//
// A writer that pauses for longer than Settle looks finished: a spool that a
// live client saves into every 5 seconds needs a Settle above that interval.
package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/orion-agent/orion/internal/clock"
)

// Names inside an entry directory and the spool.
const (
	MetadataFile = "metadata.json"
	ContentFile  = "content.txt"
	StateFile    = "state.json"
	// ImportedDir, under the spool, holds entries after their import. Like
	// every name starting with ".", it is not an entry itself.
	ImportedDir = ".imported"
)

// DefaultSettle is Options.Settle when it is zero.
const DefaultSettle = 200 * time.Millisecond

// ErrClosed is returned by Rescan after Close.
var ErrClosed = errors.New("spool: closed")

// Options configures a Spool. The zero value is ready to use.
type Options struct {
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Settle is how long an entry's files must stay unchanged before it is
	// parsed and imported; 0 means DefaultSettle.
	Settle time.Duration
	// Now tells the time; nil means Clock.Now. Prefer setting Clock: the
	// settle time is measured on Now but waited for with Clock's timers, so
	// a Now that disagrees with Clock delays imports.
	Now func() time.Time
	// Clock schedules the settle and retry timers (and tells the time when
	// Now is nil); nil means real time. Tests pass a fake and advance it.
	Clock clock.Clock
	// RetryInterval, when positive, retries a failed import after this long
	// even if the entry does not change. By default a failed import is
	// retried only when the entry changes or on Rescan.
	RetryInterval time.Duration
}

// Spool watches a spool directory and imports its entries. Its methods are
// safe for concurrent use.
type Spool struct {
	dir       string
	imported  string
	importFn  func(Entry) error
	onProblem func(Problem)
	settle    time.Duration
	retry     time.Duration
	log       *slog.Logger
	now       func() time.Time
	clock     clock.Clock
	fsw       *fsnotify.Watcher
	loopDone  chan struct{}

	// mu serializes all work on entries: events, timers and Rescan. The
	// callbacks run with it held, so they are never concurrent.
	mu       sync.Mutex
	closed   bool
	rootLost bool
	entries  map[string]*entryState // by entry name (the id)
}

// entryState is what the Spool remembers about one name in the spool.
type entryState struct {
	seen      bool
	fp        fingerprint
	firstSeen time.Time // when fp was first observed

	timer   clock.Timer // pending re-evaluation, or nil
	timerAt time.Time
	token   uint64 // tells the current timer's callback from stale ones

	watched bool // the directory has its own fsnotify watch

	// reported holds the reasons already passed to onProblem, so each is
	// reported once while the entry exists.
	reported map[string]bool
	// importedNotMoved: importFn accepted the entry but moving it to
	// .imported failed; only the move is retried, never the import.
	importedNotMoved bool
}

// New watches dir, creating it 0700 if missing, and imports its entries.
//
// For every complete entry, present at start or appearing later, it calls
// importFn. If importFn returns nil, the entry directory is moved to
// <dir>/.imported/<id> (<id>.1, <id>.2, ... if that exists), never deleted.
// If it returns an error, the entry stays and is retried when it changes or
// on Rescan; an error that is (or wraps) a *Problem is also reported through
// onProblem, for entries the daemon refuses, such as a target outside the
// allowed roots. Malformed entries are reported through onProblem once per
// (entry, reason) while the entry exists, and left untouched.
//
// importFn and onProblem are called one at a time, from the Spool's
// goroutines or from Rescan's caller; they must not call Rescan or Close.
// While importFn runs no other entry is looked at, so it should stream the
// content into the store and return, not wait on a client.
// importFn must read the content before it returns (the entry moves
// afterwards), and should be idempotent by Entry.ID: after a crash between
// its return and the move, the entry is imported again at the next start.
//
// dir must belong to the daemon's user and must not be writable by group
// or others: whatever is in it gets written to that user's files.
func New(dir string, importFn func(Entry) error, onProblem func(Problem), opts Options) (*Spool, error) {
	if importFn == nil {
		return nil, errors.New("spool: New needs an import function")
	}
	if onProblem == nil {
		onProblem = func(Problem) {}
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Now == nil {
		opts.Now = opts.Clock.Now
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: resolving %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("spool: creating the spool directory: %w", err)
	}
	if err := checkPrivate(abs); err != nil {
		return nil, err
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("spool: starting fsnotify: %w", err)
	}
	if err := fsw.Add(abs); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("spool: watching %s: %w", abs, err)
	}
	s := &Spool{
		dir:       abs,
		imported:  filepath.Join(abs, ImportedDir),
		importFn:  importFn,
		onProblem: onProblem,
		settle:    opts.Settle,
		retry:     opts.RetryInterval,
		log:       opts.Logger.With("spool", abs),
		now:       opts.Now,
		clock:     opts.Clock,
		fsw:       fsw,
		loopDone:  make(chan struct{}),
		entries:   make(map[string]*entryState),
	}
	go s.loop()
	if err := s.Rescan(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dir returns the spool directory's absolute path.
func (s *Spool) Dir() string { return s.dir }

// Rescan looks at every entry again, as after a lost event: it picks up
// entries fsnotify did not report, retries failed imports, and recreates and
// watches the spool directory if it was removed. Entries that have not
// settled are only observed; they are imported later by a timer.
func (s *Spool) Rescan() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.rescanLocked()
}

// Close stops watching and cancels pending timers. It waits for a running
// import to finish, and must not be called from importFn or onProblem.
func (s *Spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, st := range s.entries {
		s.stopTimerLocked(st)
	}
	s.mu.Unlock()
	err := s.fsw.Close()
	<-s.loopDone
	return err
}

func (s *Spool) rescanLocked() error {
	if s.rootLost {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return fmt.Errorf("spool: recreating %s: %w", s.dir, err)
		}
		if err := s.fsw.Add(s.dir); err != nil {
			return fmt.Errorf("spool: watching %s: %w", s.dir, err)
		}
		s.rootLost = false
		s.log.Info("spool directory recreated and watched again")
	}
	des, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.rootLost = true
		}
		return fmt.Errorf("spool: listing %s: %w", s.dir, err)
	}
	present := make(map[string]bool, len(des))
	for _, de := range des {
		present[de.Name()] = true
	}
	for name := range s.entries {
		if !present[name] {
			s.forgetLocked(name)
		}
	}
	for _, de := range des {
		if hidden(de.Name()) {
			continue
		}
		s.evaluateLocked(de.Name())
	}
	return nil
}
