package watch

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// readLoop turns fsnotify's events and errors into bursts. It ends when
// fsnotify closes its channels, which Close causes.
func (w *Watcher) readLoop() {
	defer w.wg.Done()
	events, errs := w.fsw.Events, w.fsw.Errors
	for events != nil || errs != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.handleEvent(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.handleError(err)
		}
	}
}

// handleEvent matches one fsnotify event against the watched targets.
func (w *Watcher) handleEvent(ev fsnotify.Event) {
	// Chmod alone is noise: indexers, backup and antivirus tools touch
	// attributes all the time, and Linux sends it on every unlink.
	op := ev.Op &^ fsnotify.Chmod
	if op == 0 {
		return
	}
	name := filepath.Clean(ev.Name)

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}

	// The watched directory itself went away: the kernel has dropped the
	// watch and its targets are gone from their paths. A later Add in the
	// directory watches it again.
	if dd := w.dirs[name]; dd != nil && op&(fsnotify.Remove|fsnotify.Rename) != 0 {
		kind := KindRemove
		if op&fsnotify.Remove == 0 {
			kind = KindRename
		}
		w.log.Warn("watched directory went away; its targets are reported and no longer watched until added again",
			"dir", name, "event", kind, "targets", len(dd.names))
		for base := range dd.names {
			w.noteLocked(filepath.Join(name, base), kind)
		}
		// No return: the directory may itself be a target in its parent.
	}

	d, base := filepath.Split(name)
	if strings.HasPrefix(base, TempPrefix) {
		return
	}
	dd := w.dirs[filepath.Clean(d)]
	if dd == nil {
		return
	}
	if _, ok := dd.names[base]; !ok {
		return
	}
	w.noteLocked(name, kindOf(op))
}

// handleError reacts to an fsnotify error. An overflow means events were
// lost, so every target may have changed unseen.
func (w *Watcher) handleError(err error) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		w.log.Warn("fsnotify error", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.log.Warn("fsnotify event queue overflowed; reporting every watched path for a rescan",
		"targets", len(w.targets))
	for key := range w.targets {
		w.noteLocked(key, KindRescan)
	}
}

// kindOf maps one fsnotify event to a Kind. Some backends (kqueue) set
// several bits at once; the most drastic one describes the result.
func kindOf(op fsnotify.Op) Kind {
	switch {
	case op.Has(fsnotify.Remove):
		return KindRemove
	case op.Has(fsnotify.Rename):
		return KindRename
	case op.Has(fsnotify.Create):
		return KindCreate
	default:
		return KindWrite
	}
}

// merge folds a new event into a burst's kind. The later event usually
// describes the state the burst left behind (write then remove: the file is
// gone; rename away then create: a new file is there), with two exceptions:
// writes that follow a create are part of making the new file, so the burst
// stays a create; and a rescan is never downgraded, because the events that
// were lost may hold anything.
func merge(old, next Kind) Kind {
	switch {
	case old == KindRescan || next == KindRescan:
		return KindRescan
	case old == KindCreate && next == KindWrite:
		return KindCreate
	default:
		return next
	}
}

// noteLocked adds an event to key's burst, starting the burst if there is
// none. Each event pushes the end of the burst back by the debounce time,
// but never beyond maxDelay after its first event. w.mu must be held.
func (w *Watcher) noteLocked(key string, kind Kind) {
	t := w.targets[key]
	if t == nil {
		return
	}
	now := w.clock.Now()
	b := w.pending[key]
	if b == nil {
		b = &burst{kind: kind, first: now, gen: t.gen}
		w.pending[key] = b
		w.armLocked(key, b, w.debounce)
		return
	}
	b.kind = merge(b.kind, kind)
	left := w.maxDelay - now.Sub(b.first)
	if left <= 0 {
		return // due now; its timer is about to fire
	}
	// If Stop fails the timer has fired and its callback, waiting for
	// w.mu, will deliver b with this event folded in.
	if b.timer.Stop() {
		w.armLocked(key, b, min(w.debounce, left))
	}
}

func (w *Watcher) armLocked(key string, b *burst, d time.Duration) {
	b.timer = w.clock.AfterFunc(d, func() { w.fire(key, b) })
}

// fire ends a burst: it queues the burst's event for delivery, unless the
// burst was dropped (Remove, Close) or replaced meanwhile.
func (w *Watcher) fire(key string, b *burst) {
	w.mu.Lock()
	if w.closed || w.pending[key] != b {
		w.mu.Unlock()
		return
	}
	delete(w.pending, key)
	t := w.targets[key]
	if t == nil || t.gen != b.gen {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, delivery{ev: Event{Path: t.path, Kind: b.kind}, gen: b.gen})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// deliverLoop calls onChange for queued events, one at a time, so the
// caller needs no locking of its own and a slow callback delays only other
// callbacks, never the reading of events.
func (w *Watcher) deliverLoop() {
	defer w.wg.Done()
	for {
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
		for {
			w.mu.Lock()
			if w.closed || len(w.queue) == 0 {
				w.mu.Unlock()
				break
			}
			d := w.queue[0]
			w.queue[0] = delivery{}
			w.queue = w.queue[1:]
			// Checked at delivery, not only when queued: a Remove in
			// between must silence the event.
			t := w.targets[filepath.Clean(d.ev.Path)]
			live := t != nil && t.gen == d.gen
			w.mu.Unlock()
			if live {
				w.onChange(d.ev)
			}
		}
	}
}
