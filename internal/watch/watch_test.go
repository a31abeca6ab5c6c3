package watch_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/watch"
)

// These tests run the real kernel notifications (inotify, kqueue) on
// t.TempDir(). They never sleep to let something happen: they wait for the
// expected event with a deadline. To show that something did NOT happen,
// they change a second target afterwards and wait for its event: events are
// handled in the order the kernel reports them, and an event for an
// unwatched path is dropped on arrival, so once the later event arrives the
// earlier one would have been seen.

const deadline = 10 * time.Second

type harness struct {
	t   *testing.T
	w   *watch.Watcher
	dir string
	ch  chan watch.Event
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), ch: make(chan watch.Event, 1000)}
	w, err := watch.New(func(ev watch.Event) { h.ch <- ev }, watch.Options{Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	h.w = w
	return h
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

func (h *harness) add(p string) {
	h.t.Helper()
	if err := h.w.Add(p); err != nil {
		h.t.Fatalf("Add(%s): %v", p, err)
	}
}

func (h *harness) write(p, content string) {
	h.t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor returns once an event for path of the given kind (any kind if
// empty) arrives, failing on an event for a path in silent, or at the
// deadline. Other events are
// tolerated: a burst the scheduler stretched beyond the debounce time
// arrives in pieces (a write after the create, remove then create on
// kqueue), so a path touched earlier may still report a trailing piece.
func (h *harness) waitFor(path string, kind watch.Kind, silent ...string) {
	h.t.Helper()
	timeout := time.After(deadline)
	var seen []watch.Event
	for {
		select {
		case ev := <-h.ch:
			seen = append(seen, ev)
			for _, p := range silent {
				if ev.Path == p {
					h.t.Fatalf("event %v for a path that must be silent (seen %v)", ev, seen)
				}
			}
			if ev.Path == path && (kind == "" || ev.Kind == kind) {
				return
			}
		case <-timeout:
			h.t.Fatalf("no %s event for %s within %v (seen %v)", kind, path, deadline, seen)
		}
	}
}

// barrier writes to a sentinel target and waits for its event, failing if
// silent is reported meanwhile. Events are handled in order, so once the
// sentinel's write is reported, an earlier change to silent would have been.
func (h *harness) barrier(sentinel, silent string) {
	h.t.Helper()
	h.write(sentinel, time.Now().String())
	h.waitFor(sentinel, "", silent)
}

func TestExternalWrite(t *testing.T) {
	h := newHarness(t)
	target := h.path("f.txt")
	h.write(target, "old\n")
	h.add(target)
	h.write(target, "new content\n")
	h.waitFor(target, watch.KindWrite)
}

func TestAtomicSave(t *testing.T) {
	h := newHarness(t)
	target := h.path("f.txt")
	h.write(target, "old\n")
	h.add(target)
	// What editors do: write a sibling temp file, rename it over the target.
	tmp := h.path(".f.txt.swp")
	h.write(tmp, "saved by an editor\n")
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	h.waitFor(target, watch.KindCreate)
	// The directory watch survives the replaced inode: a second save is seen.
	h.write(tmp, "saved again\n")
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	h.waitFor(target, watch.KindCreate)
}

func TestDelete(t *testing.T) {
	h := newHarness(t)
	target := h.path("f.txt")
	h.write(target, "x")
	h.add(target)
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	h.waitFor(target, watch.KindRemove)
}

func TestRenameAway(t *testing.T) {
	h := newHarness(t)
	target := h.path("f.txt")
	h.write(target, "x")
	h.add(target)
	if err := os.Rename(target, h.path("moved.txt")); err != nil {
		t.Fatal(err)
	}
	h.waitFor(target, watch.KindRename)
}

func TestCreateOfAbsentTarget(t *testing.T) {
	h := newHarness(t)
	target := h.path("new.txt")
	h.add(target) // does not exist yet
	h.write(target, "created by someone else\n")
	h.waitFor(target, watch.KindCreate)
}

func TestOwnTempFilesIgnored(t *testing.T) {
	h := newHarness(t)
	target, sentinel := h.path("f.txt"), h.path("sentinel.txt")
	h.add(target)
	h.add(sentinel)
	tmp := h.path(watch.TempPrefix + "f.txt-1")
	h.write(tmp, "x")
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	h.barrier(sentinel, target)
}

func TestTwoTargetsInOneDirectory(t *testing.T) {
	h := newHarness(t)
	a, b := h.path("a.txt"), h.path("b.txt")
	h.write(a, "a")
	h.write(b, "b")
	h.add(a)
	h.add(b)
	h.write(a, "a2")
	h.waitFor(a, watch.KindWrite)
	h.write(b, "b2")
	h.waitFor(b, watch.KindWrite)
	// A file in the same directory that is not a target is not reported.
	other := h.path("other.txt")
	h.write(other, "o")
	h.barrier(a, other)
}

func TestRemoveStopsCallbacks(t *testing.T) {
	h := newHarness(t)
	target, sentinel := h.path("f.txt"), h.path("sentinel.txt")
	h.add(target)
	h.add(sentinel)
	h.w.Remove(target)
	h.write(target, "after Remove")
	h.barrier(sentinel, target)
}

func TestRemoveLastTargetInDirectory(t *testing.T) {
	h := newHarness(t)
	sub := h.path("sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	target, sentinel := filepath.Join(sub, "f.txt"), h.path("sentinel.txt")
	h.add(target)
	h.add(sentinel)
	h.w.Remove(target) // sub's watch goes away
	h.write(target, "x")
	h.barrier(sentinel, target)
	h.add(target) // and comes back
	h.write(target, "y")
	h.waitFor(target, watch.KindWrite)
}

func TestRefcount(t *testing.T) {
	h := newHarness(t)
	target, sentinel := h.path("f.txt"), h.path("sentinel.txt")
	h.write(target, "x")
	h.add(target)
	h.add(target)
	h.add(sentinel)
	h.w.Remove(target) // one reference left
	h.write(target, "still watched")
	h.waitFor(target, watch.KindWrite)
	// Let any trailing piece of that burst be delivered first: a callback
	// already handed to onChange may still run after Remove.
	h.barrier(sentinel, "")
	h.w.Remove(target) // none left
	h.write(target, "no longer watched")
	h.barrier(sentinel, target)
	h.w.Remove(target) // one Remove too many is harmless
}

func TestDirectoryMovedAway(t *testing.T) {
	h := newHarness(t)
	sub := h.path("sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sub, "f.txt")
	h.write(target, "x")
	h.add(target)
	if err := os.Rename(sub, h.path("sub2")); err != nil {
		t.Fatal(err)
	}
	h.waitFor(target, watch.KindRename)
	// Recreating the directory and adding a new target there watches it
	// again; the old target is still registered and reported too.
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(sub, "g.txt")
	h.add(other)
	h.write(other, "y")
	h.waitFor(other, watch.KindCreate)
	h.write(target, "z")
	h.waitFor(target, watch.KindCreate)
}

func TestAddErrors(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, path string }{
		{"Relative", "rel/f.txt"},
		{"Root", "/"},
		{"MissingDirectory", h.path("no/such/dir/f.txt")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.w.Add(tc.path); err == nil {
				t.Fatalf("Add(%q) succeeded, want an error", tc.path)
			}
		})
	}
	// The caller can tell a missing directory apart, and rely on the hash
	// check at finalize instead.
	if err := h.w.Add(h.path("no/such/dir/f.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Add in a missing directory: %v, want an error wrapping fs.ErrNotExist", err)
	}
	// A failed Add registers nothing: a Remove is harmless.
	h.w.Remove(h.path("no/such/dir/f.txt"))
}

func TestEventPathIsAsAdded(t *testing.T) {
	h := newHarness(t)
	spelled := h.dir + "/./f.txt" // not clean
	h.add(spelled)
	h.write(h.path("f.txt"), "x")
	h.waitFor(spelled, watch.KindCreate)
}

func TestCloseStopsEverything(t *testing.T) {
	h := newHarness(t)
	target := h.path("f.txt")
	h.add(target)
	if err := h.w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.w.Add(h.path("g.txt")); err != watch.ErrClosed {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}
	h.w.Remove(target) // harmless after Close
	if err := h.w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
