package watch

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/orion-agent/orion/internal/clock"
)

// These tests feed synthetic fsnotify events straight into the watcher and
// move a fake clock, so the debounce logic is checked deterministically;
// watch_test.go checks the same behaviour against the real kernel.

type recorder struct {
	mu  sync.Mutex
	got []Event
	ch  chan struct{}
}

func newRecorder() *recorder { return &recorder{ch: make(chan struct{}, 1000)} }

func (r *recorder) on(ev Event) {
	r.mu.Lock()
	r.got = append(r.got, ev)
	r.mu.Unlock()
	r.ch <- struct{}{}
}

// waitN waits until n events were delivered: delivery runs on its own
// goroutine, so it completes shortly after the clock fires the timer.
func (r *recorder) waitN(t *testing.T, n int) []Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		if len(r.got) >= n {
			got := append([]Event(nil), r.got...)
			r.mu.Unlock()
			return got
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("waited for %d events, got %v", n, r.snapshot())
		}
	}
}

func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.got...)
}

func newFakeWatcher(t *testing.T) (*Watcher, *clock.Fake, *recorder, string) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	rec := newRecorder()
	w, err := New(rec.on, Options{Debounce: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, clk, rec, t.TempDir()
}

func TestDebounce(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []fsnotify.Op
		want Kind
	}{
		{"Writes", []fsnotify.Op{fsnotify.Write, fsnotify.Write, fsnotify.Write}, KindWrite},
		{"CreateThenWrites", []fsnotify.Op{fsnotify.Create, fsnotify.Write, fsnotify.Write}, KindCreate},
		{"WriteThenRemove", []fsnotify.Op{fsnotify.Write, fsnotify.Remove}, KindRemove},
		{"RenameAwayThenCreate", []fsnotify.Op{fsnotify.Rename, fsnotify.Create, fsnotify.Write}, KindCreate},
		{"KqueueReplace", []fsnotify.Op{fsnotify.Remove, fsnotify.Create}, KindCreate},
		{"CombinedBits", []fsnotify.Op{fsnotify.Write | fsnotify.Remove}, KindRemove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, clk, rec, dir := newFakeWatcher(t)
			target := filepath.Join(dir, "f.txt")
			if err := w.Add(target); err != nil {
				t.Fatal(err)
			}
			for i, op := range tc.ops {
				if i > 0 {
					clk.Advance(10 * time.Millisecond)
				}
				w.handleEvent(fsnotify.Event{Name: target, Op: op})
			}
			clk.Advance(49 * time.Millisecond)
			if !pending(w, target) {
				t.Fatalf("burst ended before the path was quiet for the debounce time (delivered %v)", rec.snapshot())
			}
			clk.Advance(time.Millisecond)
			if pending(w, target) {
				t.Fatal("burst still pending after the path was quiet for the debounce time")
			}
			got := rec.waitN(t, 1)
			if want := (Event{Path: target, Kind: tc.want}); len(got) != 1 || got[0] != want {
				t.Fatalf("got %v, want [%v]", got, want)
			}
		})
	}
}

// pending reports whether a burst for key is still being debounced. Delivery
// runs on its own goroutine, so this, not the recorder, tells exactly when a
// burst ended.
func pending(w *Watcher, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending[key] != nil
}

func TestDebounceMaxDelay(t *testing.T) {
	w, clk, rec, dir := newFakeWatcher(t)
	target := filepath.Join(dir, "log.txt")
	if err := w.Add(target); err != nil {
		t.Fatal(err)
	}
	// A write every 20ms never leaves the path quiet for 50ms; the burst
	// must still be reported at MaxDelay (200ms) after its first event.
	for range 10 {
		w.handleEvent(fsnotify.Event{Name: target, Op: fsnotify.Write})
		clk.Advance(19 * time.Millisecond)
		if !pending(w, target) {
			t.Fatalf("burst ended at %v, before MaxDelay", clk.Now())
		}
		clk.Advance(time.Millisecond)
	}
	if pending(w, target) {
		t.Fatal("burst still pending at MaxDelay after its first event")
	}
	got := rec.waitN(t, 1)
	if want := (Event{Path: target, Kind: KindWrite}); got[0] != want {
		t.Fatalf("got %v, want %v", got[0], want)
	}
}

func TestIgnored(t *testing.T) {
	w, clk, rec, dir := newFakeWatcher(t)
	target := filepath.Join(dir, "f.txt")
	if err := w.Add(target); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []fsnotify.Event{
		{Name: target, Op: fsnotify.Chmod},
		{Name: filepath.Join(dir, TempPrefix+"f.txt-123"), Op: fsnotify.Create},
		{Name: filepath.Join(dir, "other.txt"), Op: fsnotify.Write},
		{Name: filepath.Join(dir, "sub", "f.txt"), Op: fsnotify.Write},
	} {
		w.handleEvent(ev)
	}
	clk.Advance(time.Second)
	// A real event afterwards is the only one delivered.
	w.handleEvent(fsnotify.Event{Name: target, Op: fsnotify.Write})
	clk.Advance(time.Second)
	if got := rec.waitN(t, 1); len(got) != 1 || got[0].Kind != KindWrite {
		t.Fatalf("got %v, want only the write", got)
	}
}

func TestOverflowRescansEveryPath(t *testing.T) {
	w, clk, rec, tmp := newFakeWatcher(t)
	a, b := filepath.Join(tmp, "a.txt"), filepath.Join(tmp, "sub", "b.txt")
	if err := w.Add(a); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock() // b's directory does not exist; register it by hand
	w.dirs[filepath.Dir(b)] = &dir{names: map[string]struct{}{"b.txt": {}}}
	w.targets[b] = &target{path: b, refs: 1, gen: 99}
	w.mu.Unlock()

	w.handleEvent(fsnotify.Event{Name: a, Op: fsnotify.Create})
	w.handleError(fsnotify.ErrEventOverflow)
	w.handleEvent(fsnotify.Event{Name: a, Op: fsnotify.Write}) // must not downgrade
	clk.Advance(time.Second)
	got := rec.waitN(t, 2)
	kinds := map[string]Kind{}
	for _, ev := range got {
		kinds[ev.Path] = ev.Kind
	}
	if len(got) != 2 || kinds[a] != KindRescan || kinds[b] != KindRescan {
		t.Fatalf("got %v, want a rescan for each of %s and %s", got, a, b)
	}
}

func TestRemoveDropsPendingBurst(t *testing.T) {
	w, clk, rec, dir := newFakeWatcher(t)
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, p := range []string{a, b} {
		if err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	w.handleEvent(fsnotify.Event{Name: a, Op: fsnotify.Write})
	w.Remove(a)
	w.handleEvent(fsnotify.Event{Name: b, Op: fsnotify.Write})
	clk.Advance(time.Second)
	if got := rec.waitN(t, 1); len(got) != 1 || got[0].Path != b {
		t.Fatalf("got %v, want only b's event", got)
	}
}

func TestQueuedEventOfEarlierRegistrationIsDropped(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	dir := t.TempDir()
	gate, a := filepath.Join(dir, "gate.txt"), filepath.Join(dir, "a.txt")
	entered, release := make(chan struct{}), make(chan struct{})
	rec := newRecorder()
	w, err := New(func(ev Event) {
		if ev.Path == gate {
			close(entered)
			<-release // keep the delivery goroutine busy
		}
		rec.on(ev)
	}, Options{Debounce: 50 * time.Millisecond, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{gate, a} {
		if err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	w.handleEvent(fsnotify.Event{Name: gate, Op: fsnotify.Write})
	clk.Advance(time.Second)
	<-entered
	// a's write is now queued behind the blocked callback when a is
	// removed and added again: it belongs to the old registration.
	w.handleEvent(fsnotify.Event{Name: a, Op: fsnotify.Write})
	clk.Advance(time.Second)
	w.Remove(a)
	if err := w.Add(a); err != nil {
		t.Fatal(err)
	}
	w.handleEvent(fsnotify.Event{Name: a, Op: fsnotify.Remove})
	clk.Advance(time.Second)
	close(release)
	got := rec.waitN(t, 2)
	want := []Event{{Path: gate, Kind: KindWrite}, {Path: a, Kind: KindRemove}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestDirectoryGone(t *testing.T) {
	w, clk, rec, dir := newFakeWatcher(t)
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, p := range []string{a, b} {
		if err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	w.handleEvent(fsnotify.Event{Name: dir, Op: fsnotify.Rename})
	clk.Advance(time.Second)
	got := rec.waitN(t, 2)
	for _, ev := range got {
		if ev.Kind != KindRename {
			t.Fatalf("got %v, want a rename for both targets", got)
		}
	}
}
