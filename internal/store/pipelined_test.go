package store_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/store"
)

// A large chunk lets the next batches be written while it is synced: when
// that sync fails, the stream's next chunk and another session's chunk,
// written meanwhile after bytes of unknown state, are refused too, and a
// crash then brings none of them back (the fence), while the chunks
// acknowledged before, whose index entries were never committed, are
// replayed whole. Retried, all are stored.
func TestPipelinedChunksAfterAFailedSyncStayOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s, held := openHoldingSyncs(t, path)
	defer s.Close()
	for i, c := range []string{"one;", "two;"} {
		if err := s.Append("a", uint64(i+1), []byte(c), nil); err != nil {
			t.Fatal(err)
		}
	}
	big3 := bytes.Repeat([]byte("3"), 1<<20)
	big4 := bytes.Repeat([]byte("4"), 1<<20)
	held.holdNext()
	a3, err := s.EnqueueAppend("a", 3, big3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done3 := make(chan error, 1)
	go func() { done3 <- a3.Wait() }()
	<-held.syncing
	before := held.written()
	a4, err := s.EnqueueAppend("a", 4, big4, nil, a3)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := s.EnqueueAppend("b", 1, []byte("b-one;"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done4, doneB := make(chan error, 1), make(chan error, 1)
	go func() { done4 <- a4.Wait() }()
	go func() { doneB <- b1.Wait() }()
	// Both are written during the held sync: a header and a chunk, and a
	// small record, in one batch or two.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n := held.written() - before
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes during the held sync, want the next two batches'", n)
		}
	}
	held.release <- syscall.EIO
	if err := <-done3; err == nil {
		t.Fatal("chunk 3 acknowledged though its sync failed")
	}
	if err := <-done4; err == nil {
		t.Fatal("chunk 4, written during the failed sync of 3, acknowledged")
	}
	if err := <-doneB; err == nil {
		t.Fatal("another session's chunk, written during a failed sync after its bytes, acknowledged")
	}

	c := openStore(t, crashImage(t, path))
	if got := content(t, c, "a"); got != "one;two;" {
		t.Fatalf("after a crash, session a holds %d bytes beginning %.20q, want the chunks before the failed one", len(got), got)
	}
	var buf bytes.Buffer
	if _, err := c.CopyRange("b", &buf, 0, -1); err == nil && buf.Len() > 0 {
		t.Fatalf("after a crash, session b holds %q, refused", buf.String())
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}

	// The clients retry.
	r3, err := s.EnqueueAppend("a", 3, big3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r4, err := s.EnqueueAppend("a", 4, big4, nil, r3)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := s.EnqueueAppend("b", 1, []byte("b-one;"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*store.Appending{r3, r4, rb} {
		if err := a.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	want := "one;two;" + string(big3) + string(big4)
	c = openStore(t, crashImage(t, path))
	for _, st := range []*store.Store{s, c} {
		if got := content(t, st, "a"); got != want {
			t.Fatalf("session a holds %d bytes, want %d", len(got), len(want))
		}
		if got := content(t, st, "b"); got != "b-one;" {
			t.Fatalf("session b holds %q", got)
		}
	}
}
