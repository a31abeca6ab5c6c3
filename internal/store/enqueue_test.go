package store_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/contentlog"
	"github.com/orion-agent/orion/internal/store"
)

// A session's chunk queued after one whose sync fails is refused and never
// written, though the batch it rode was written, and a crash then leaves
// the session's chunks as they were before the failed one; retried in
// order, both are stored.
func TestEnqueueAppendAfterFailedChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s, held := openHoldingSyncs(t, path)
	defer s.Close()
	for i, c := range []string{"one;", "two;"} {
		if err := s.Append("a", uint64(i+1), []byte(c), nil); err != nil {
			t.Fatal(err)
		}
	}
	held.holdNext()
	a3, err := s.EnqueueAppend("a", 3, []byte("three;"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done3 := make(chan error, 1)
	go func() { done3 <- a3.Wait() }()
	<-held.syncing
	// While 3 syncs: 4 follows it, and another session's chunk depends on
	// nothing. Both ride the next batch.
	a4, err := s.EnqueueAppend("a", 4, []byte("four;"), nil, a3)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := s.EnqueueAppend("b", 1, []byte("b-one;"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	held.release <- errors.New("injected sync failure")
	if err := <-done3; err == nil {
		t.Fatal("chunk 3 acknowledged though its sync failed")
	}
	if err := a4.Wait(); !errors.Is(err, contentlog.ErrAfterFailed) {
		t.Fatalf("chunk 4, queued after the failed 3: %v, want ErrAfterFailed", err)
	}
	if err := b1.Wait(); err != nil {
		t.Fatalf("another session's chunk: %v", err)
	}

	c := openStore(t, crashImage(t, path))
	if got := content(t, c, "a"); got != "one;two;" {
		t.Fatalf("after a crash, session a holds %q, want the chunks before the failed one", got)
	}
	if got := content(t, c, "b"); got != "b-one;" {
		t.Fatalf("after a crash, session b holds %q", got)
	}

	// The client retries 3, then 4.
	r3, err := s.EnqueueAppend("a", 3, []byte("three;"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r4, err := s.EnqueueAppend("a", 4, []byte("four;"), nil, r3)
	if err != nil {
		t.Fatal(err)
	}
	if err := r3.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := r4.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, s, "a"); got != "one;two;three;four;" {
		t.Fatalf("after the retries, session a holds %q", got)
	}
}

// Chunks enqueued before the first is waited for share its sync.
func TestEnqueueAppendSharesSync(t *testing.T) {
	s := newStore(t)
	if err := s.Append("a", 1, []byte("one;"), []byte("m")); err != nil {
		t.Fatal(err)
	}
	before, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var as []*store.Appending
	var prev *store.Appending
	for seq := uint64(2); seq <= 5; seq++ {
		a, err := s.EnqueueAppend("a", seq, []byte("chunk;"), nil, prev)
		if err != nil {
			t.Fatal(err)
		}
		as, prev = append(as, a), a
	}
	for _, a := range as {
		if err := a.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Log.Syncs - before.Log.Syncs; got != 1 {
		t.Fatalf("%d log syncs for 4 chunks queued together, want 1", got)
	}
	if got := content(t, s, "a"); got != "one;chunk;chunk;chunk;chunk;" {
		t.Fatalf("session holds %q", got)
	}
}

// content is session id's chunks, concatenated.
func content(t *testing.T, s *store.Store, id string) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.CopyRange(id, &buf, 0, -1); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// heldSync holds a store's next log sync, once asked to, until a result is
// sent on release; syncing closes as that sync starts. It counts the log's
// writes.
type heldSync struct {
	mu      sync.Mutex
	block   bool
	writes  int
	syncing chan struct{}
	release chan error
}

// openHoldingSyncs opens the store at path with its log's syncs held as
// heldSync says, and its deferred writes left to their commits.
func openHoldingSyncs(t *testing.T, path string) (*store.Store, *heldSync) {
	t.Helper()
	h := &heldSync{syncing: make(chan struct{}), release: make(chan error)}
	s, err := store.Open(path, store.WithLogFaults(store.Options{DeferDelay: time.Hour}, h.fault))
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

func (h *heldSync) fault(op string) error {
	h.mu.Lock()
	if op == "write" {
		h.writes++
	}
	held := h.block && op == "sync"
	if held {
		h.block = false
	}
	h.mu.Unlock()
	if !held {
		return nil
	}
	close(h.syncing)
	return <-h.release
}

// holdNext holds the next sync.
func (h *heldSync) holdNext() {
	h.mu.Lock()
	h.block = true
	h.mu.Unlock()
}

// written is how many writes the log has made.
func (h *heldSync) written() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes
}
