package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// hidden names in the spool are not entries: .imported, and entries being
// built under a temporary name before they are renamed into place.
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// loop handles fsnotify's events until Close closes its channels.
func (s *Spool) loop() {
	defer close(s.loopDone)
	events, errs := s.fsw.Events, s.fsw.Errors
	for events != nil || errs != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			s.handleEvent(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			s.handleError(err)
		}
	}
}

// handleEvent re-evaluates the entry an event belongs to. The spool
// directory is watched for entries coming and going, and each entry
// directory for its files changing; either way the entry is the first
// component of the path below the spool.
func (s *Spool) handleEvent(ev fsnotify.Event) {
	if ev.Op&^fsnotify.Chmod == 0 {
		return
	}
	rel, err := filepath.Rel(s.dir, filepath.Clean(ev.Name))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if rel == "." {
		if ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
			s.rootLost = true
			s.log.Error("the spool directory was removed or moved; nothing is imported until Rescan recreates it")
		}
		return
	}
	name, _, _ := strings.Cut(rel, string(filepath.Separator))
	if hidden(name) {
		return
	}
	s.evaluateLocked(name)
}

func (s *Spool) handleError(err error) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		s.log.Warn("fsnotify error", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.log.Warn("fsnotify event queue overflowed; rescanning the spool")
	if err := s.rescanLocked(); err != nil {
		s.log.Error("rescanning the spool", "err", err)
	}
}

// evaluateLocked looks at one name in the spool and takes the next step:
// forget it if it is gone, wait if it has not settled, otherwise parse it
// and import it or report why not. s.mu must be held.
func (s *Spool) evaluateLocked(name string) {
	dir := filepath.Join(s.dir, name)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		s.forgetLocked(name)
		return
	}
	if err != nil {
		s.log.Warn("reading a spool entry", "entry", name, "err", err)
		return
	}
	st := s.entries[name]
	if st == nil {
		st = &entryState{reported: make(map[string]bool)}
		s.entries[name] = st
	}
	if fi.IsDir() && !st.watched {
		// Watched before it is fingerprinted, so no change after the
		// fingerprint goes unnoticed.
		if err := s.fsw.Add(dir); err != nil {
			s.log.Warn("watching a spool entry; it is still imported, but changes after a problem are seen only on Rescan",
				"entry", name, "err", err)
		} else {
			st.watched = true
		}
	}

	fp := fingerprintOf(dir, fi)
	now := s.now()
	if !st.seen || fp != st.fp {
		st.seen, st.fp, st.firstSeen = true, fp, now
	}
	if at := st.firstSeen.Add(s.settle); now.Before(at) {
		s.scheduleLocked(name, st, at)
		return
	}
	s.stopTimerLocked(st)

	if st.importedNotMoved {
		s.moveLocked(name, st)
		return
	}
	e, p := Parse(dir)
	if p != nil {
		s.reportLocked(st, *p)
		return
	}
	for _, w := range e.Warnings {
		s.log.Warn("spool entry imported despite a problem", "entry", name, "problem", w)
	}
	if err := s.importFn(e); err != nil {
		var p *Problem
		if errors.As(err, &p) {
			q := *p
			q.Dir = dir
			if q.Reason == "" {
				q.Reason = ReasonRejected
			}
			if q.Msg == "" {
				q.Msg = err.Error()
			}
			s.reportLocked(st, q)
			return
		}
		s.log.Warn("importing a spool entry failed; it stays and is retried when it changes or on rescan",
			"entry", name, "err", err)
		if s.retry > 0 {
			s.scheduleLocked(name, st, now.Add(s.retry))
		}
		return
	}
	if fi, err := os.Lstat(dir); err == nil && fingerprintOf(dir, fi) != fp {
		s.log.Warn("spool entry changed while it was imported; the import may lack the change, which stays in .imported",
			"entry", name)
	}
	s.log.Info("imported spool entry", "entry", name, "target", e.TargetFile, "bytes", e.ContentSize)
	st.importedNotMoved = true
	s.moveLocked(name, st)
}

// moveLocked moves an imported entry to .imported, so it is never imported
// again and never lost.
func (s *Spool) moveLocked(name string, st *entryState) {
	dir := filepath.Join(s.dir, name)
	if st.watched {
		// Before the move: a watch follows the directory to its new place.
		if err := s.fsw.Remove(dir); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
			s.log.Debug("removing an entry's watch", "entry", name, "err", err)
		}
		st.watched = false
	}
	dst, err := s.moveTo(dir, name)
	if err != nil {
		s.log.Error("moving an imported spool entry", "entry", name, "err", err)
		s.reportLocked(st, Problem{Dir: dir, Reason: ReasonMoveFailed, Msg: fmt.Sprintf(
			"imported, but could not be moved to %s (%v); it is not imported again, but fix the cause and Rescan to move it", s.imported, err)})
		if s.fsw.Add(dir) == nil {
			st.watched = true
		}
		if s.retry > 0 {
			s.scheduleLocked(name, st, s.now().Add(s.retry))
		}
		return
	}
	s.log.Debug("moved imported spool entry", "entry", name, "to", dst)
	s.forgetLocked(name)
}

func (s *Spool) moveTo(dir, name string) (string, error) {
	if err := os.Mkdir(s.imported, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	// Never over an earlier import of the same id: on Linux a rename
	// replaces an empty directory, and the earlier one is evidence.
	dst := filepath.Join(s.imported, name)
	for n := 1; ; n++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return "", err
		}
		if n > 10000 {
			return "", fmt.Errorf("%s holds too many entries named %s", s.imported, name)
		}
		dst = filepath.Join(s.imported, fmt.Sprintf("%s.%d", name, n))
	}
	if err := os.Rename(dir, dst); err != nil {
		return "", err
	}
	// Until both directories are synced the rename may be lost in a power
	// failure, and the entry would be imported a second time.
	for _, d := range []string{s.dir, s.imported} {
		if err := syncDir(d); err != nil {
			s.log.Warn("syncing a spool directory after a move", "dir", d, "err", err)
		}
	}
	return dst, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// reportLocked passes p to onProblem unless its reason was already
// reported for this entry.
func (s *Spool) reportLocked(st *entryState, p Problem) {
	if st.reported[p.Reason] {
		return
	}
	st.reported[p.Reason] = true
	s.log.Warn("spool entry not imported; left in place", "entry", p.Dir, "reason", p.Reason, "problem", p.Msg)
	s.onProblem(p)
}

// forgetLocked drops what is known about a name that left the spool, so an
// entry that reappears under it starts afresh, problems included.
func (s *Spool) forgetLocked(name string) {
	st := s.entries[name]
	if st == nil {
		return
	}
	s.stopTimerLocked(st)
	if st.watched {
		// Usually the kernel dropped it with the directory already.
		_ = s.fsw.Remove(filepath.Join(s.dir, name))
	}
	delete(s.entries, name)
}

// scheduleLocked makes sure the entry is evaluated again at or before at.
func (s *Spool) scheduleLocked(name string, st *entryState, at time.Time) {
	if s.closed {
		return
	}
	if st.timer != nil && !st.timerAt.After(at) {
		return
	}
	s.stopTimerLocked(st)
	st.token++
	token := st.token
	st.timerAt = at
	st.timer = s.clock.AfterFunc(at.Sub(s.now()), func() { s.timerFired(name, st, token) })
}

func (s *Spool) stopTimerLocked(st *entryState) {
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
}

func (s *Spool) timerFired(name string, st *entryState, token uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.entries[name] != st || st.token != token {
		return
	}
	st.timer = nil
	s.evaluateLocked(name)
}

// fingerprint is what "has not changed" means for an entry: the existence,
// type, size and modification time of the directory and its three files.
type fingerprint struct {
	dir, metadata, content, state stamp
}

type stamp struct {
	exists bool
	mode   fs.FileMode
	size   int64
	mtime  int64
}

func fingerprintOf(dir string, fi fs.FileInfo) fingerprint {
	fp := fingerprint{dir: stampOf(fi)}
	if !fi.IsDir() {
		return fp
	}
	for _, f := range []struct {
		name string
		dst  *stamp
	}{{MetadataFile, &fp.metadata}, {ContentFile, &fp.content}, {StateFile, &fp.state}} {
		if fi, err := os.Lstat(filepath.Join(dir, f.name)); err == nil {
			*f.dst = stampOf(fi)
		}
	}
	return fp
}

func stampOf(fi fs.FileInfo) stamp {
	return stamp{exists: true, mode: fi.Mode().Type(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
