package contentlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/contentlog"
)

// heldSyncs is a fault hook that records the log's writes and syncs in
// order and holds the first sync until an error (nil: none) is sent on
// release, which that sync then returns.
type heldSyncs struct {
	mu      sync.Mutex
	ops     []string
	held    chan struct{} // closed once the first sync is being held
	release chan error
	holding bool
	// writesBefore is the number of writes when the held sync started.
	writesBefore int
}

func newHeldSyncs() *heldSyncs {
	return &heldSyncs{held: make(chan struct{}), release: make(chan error, 1)}
}

func (h *heldSyncs) fault(op string) error {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	first := op == "sync" && !h.holding
	if first {
		h.holding = true
		h.writesBefore = h.countLocked("write")
	}
	h.mu.Unlock()
	if first {
		close(h.held)
		return <-h.release
	}
	return nil
}

// letGo releases a sync still held, so that a failing test can close its
// log; registered after open, it runs before the log's Close.
func (h *heldSyncs) letGo() {
	select {
	case h.release <- nil:
	default:
	}
}

func (h *heldSyncs) count(op string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.countLocked(op)
}

// writesDuring is the number of writes since the held sync started.
func (h *heldSyncs) writesDuring() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.countLocked("write") - h.writesBefore
}

func (h *heldSyncs) countLocked(op string) int {
	n := 0
	for _, o := range h.ops {
		if o == op {
			n++
		}
	}
	return n
}

// waitFor waits until cond holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitInBackground runs q's Wait in the background: its error comes on the
// channel, and the func reports whether it has returned.
func waitInBackground(q *contentlog.Queued) (<-chan error, func() bool) {
	ch := make(chan error, 1)
	var mu sync.Mutex
	returned := false
	go func() {
		_, err := q.Wait()
		mu.Lock()
		returned = true
		mu.Unlock()
		ch <- err
	}()
	return ch, func() bool { mu.Lock(); defer mu.Unlock(); return returned }
}

// A large batch (a chunk of a file streamed whole) lets the next batch be
// written while it is synced, so that the copy into the page cache does not
// wait for the disk; the next batch is still synced after it, and is
// acknowledged and told durable only after it.
func TestLargeBatchLetsTheNextBeWrittenDuringItsSync(t *testing.T) {
	h := newHeldSyncs()
	l := open(t, t.TempDir(), contentlog.WithFaults(contentlog.Options{}, h.fault))
	t.Cleanup(h.letGo)
	var order []string
	var mu sync.Mutex
	durable := func(name string) func([]contentlog.Ref) {
		return func([]contentlog.Ref) { mu.Lock(); order = append(order, name); mu.Unlock() }
	}
	big := bytes.Repeat([]byte{'b'}, 1<<20)
	q1, err := l.Enqueue([][][]byte{{big}}, durable("big"), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, firstDone := waitInBackground(q1)
	<-h.held
	q2, err := l.Enqueue([][][]byte{{[]byte("next")}}, durable("next"), q1)
	if err != nil {
		t.Fatal(err)
	}
	second, secondDone := waitInBackground(q2)
	// Written while the first batch's sync is held; not synced, not
	// acknowledged.
	waitFor(t, "the next batch's write", func() bool { return h.writesDuring() > 0 })
	time.Sleep(20 * time.Millisecond)
	if got := h.count("sync"); got != 1 {
		t.Fatalf("%d syncs while the first is held, want 1 (syncs run one at a time)", got)
	}
	if firstDone() || secondDone() {
		t.Fatal("an append returned before its sync")
	}
	h.release <- nil
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if got := h.count("sync"); got != 2 {
		t.Fatalf("%d syncs, want 2", got)
	}
	if fmt.Sprint(order) != "[big next]" {
		t.Fatalf("durable calls in order %v, want [big next]", order)
	}
	if got := scanAll(t, l); len(got) != 2 || got[1] != "next" {
		t.Fatalf("log holds %d records, last %q", len(got), got[len(got)-1])
	}
}

// A batch without a large chunk keeps the lead until it is durable, however
// large it is (many sessions' small appends): what comes meanwhile is
// gathered into the next batch, one write, as before.
func TestSmallBatchIsNotWrittenOver(t *testing.T) {
	t.Run("OneRecord", func(t *testing.T) { testSmallBatchIsNotWrittenOver(t, 1) })
	t.Run("ManySmallRecords", func(t *testing.T) { testSmallBatchIsNotWrittenOver(t, 128) })
}

func testSmallBatchIsNotWrittenOver(t *testing.T, records int) {
	h := newHeldSyncs()
	l := open(t, t.TempDir(), contentlog.WithFaults(contentlog.Options{}, h.fault))
	t.Cleanup(h.letGo)
	// records of 4 KiB in one batch: 512 KiB for 128.
	var recs [][][]byte
	for range records {
		recs = append(recs, [][]byte{bytes.Repeat([]byte{'s'}, 4<<10)})
	}
	q1, err := l.Enqueue(recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := waitInBackground(q1)
	<-h.held
	var waits []<-chan error
	for i := range 3 {
		q, err := l.Enqueue([][][]byte{{[]byte(fmt.Sprint("later-", i))}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := waitInBackground(q)
		waits = append(waits, ch)
	}
	time.Sleep(20 * time.Millisecond)
	if got := h.writesDuring(); got != 0 {
		t.Fatalf("%d writes while a small batch syncs, want none", got)
	}
	h.release <- nil
	for _, ch := range append(waits, first) {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if got := h.count("sync"); got != 2 {
		t.Fatalf("%d syncs, want 2: the three later records share one", got)
	}
}

// A batch written while the sync of the batch before it fails, in the same
// segment, after bytes of unknown state, fails too, as a write error of that
// segment (which the store fences out), even though its own sync would have
// succeeded; the next batch goes to a new segment, and nothing refused is
// found in the log.
func TestFailedSyncFailsTheBatchWrittenDuringIt(t *testing.T) {
	h := newHeldSyncs()
	h.holding = true // not this record's sync
	dir := t.TempDir()
	l := open(t, dir, contentlog.WithFaults(contentlog.Options{}, h.fault))
	t.Cleanup(h.letGo)
	acked := appendOne(t, l, "acked")
	h.mu.Lock()
	h.holding = false // hold the next sync
	h.mu.Unlock()
	big := bytes.Repeat([]byte{'b'}, 1<<20)
	q1, err := l.Enqueue([][][]byte{{big}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := waitInBackground(q1)
	<-h.held
	q2, err := l.Enqueue([][][]byte{{[]byte("written-meanwhile")}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := waitInBackground(q2)
	waitFor(t, "the next batch's write", func() bool { return h.writesDuring() > 0 })
	h.release <- syscall.EIO
	var we *contentlog.WriteError
	if err := <-first; !errors.Is(err, syscall.EIO) || !errors.As(err, &we) || we.Seg != acked.Seg {
		t.Fatalf("failed sync: %v, want EIO as a write error of segment %d", err, acked.Seg)
	}
	if err := <-second; !errors.As(err, &we) || we.Seg != acked.Seg {
		t.Fatalf("batch written during a failed sync: %v, want a write error of segment %d", err, acked.Seg)
	}
	after := appendOne(t, l, "after")
	if after.Seg == acked.Seg {
		t.Fatalf("the batch after a failed sync went to segment %d, the failed one", after.Seg)
	}
	l.Close()
	l = open(t, dir, contentlog.Options{})
	for _, ref := range []contentlog.Ref{acked, after} {
		if _, err := l.Read(ref); err != nil {
			t.Fatalf("acknowledged record: %v", err)
		}
	}
}

// Batches written while the one before them waits for the disk share one
// sync: the next batch's sync covers every batch written before it started.
func TestBatchesWrittenDuringASyncShareTheNext(t *testing.T) {
	h := newHeldSyncs()
	l := open(t, t.TempDir(), contentlog.WithFaults(contentlog.Options{}, h.fault))
	t.Cleanup(h.letGo)
	var order []string
	var mu sync.Mutex
	var waits []<-chan error
	for i := range 3 {
		name := fmt.Sprint("big-", i)
		q, err := l.Enqueue([][][]byte{{bytes.Repeat([]byte{'b'}, 1<<20)}}, func([]contentlog.Ref) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := waitInBackground(q)
		waits = append(waits, ch)
		if i == 0 {
			<-h.held
		}
		// Each is written, as a batch of its own, before the next comes.
		waitFor(t, "the write of "+name, func() bool { return h.count("write") >= 2*(i+1) })
	}
	h.release <- nil
	for _, ch := range waits {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if got := h.count("sync"); got != 2 {
		t.Fatalf("%d syncs for a held batch and two written during its sync, want 2", got)
	}
	if fmt.Sprint(order) != "[big-0 big-1 big-2]" {
		t.Fatalf("durable calls in order %v", order)
	}
}
