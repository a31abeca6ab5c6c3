package store_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/store"
)

// An append's chunk is the caller's again once the append is durable (the
// daemon reads the next frame into the same buffer, or lets it go): what
// waits for the next index commit, up to thousands of entries and a
// second, holds the chunk's place in the log, never the chunk. Else a
// stream of 1 MiB chunks would keep a second's worth of them in memory.
func TestDeferredIndexHoldsNoChunk(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), "orion.db"), store.Options{DeferDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const chunks, size = 48, 1 << 20
	before := heap()
	var last *store.Appending
	for seq := uint64(1); seq <= chunks; seq++ {
		a, err := s.EnqueueAppend("s", seq, make([]byte, size), nil, last)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Wait(); err != nil {
			t.Fatal(err)
		}
		last = a
	}
	last = nil
	held := int64(heap()) - int64(before)
	if held > chunks*size/4 {
		t.Errorf("%d MiB held after %d chunks of 1 MiB were acknowledged, their index entries not yet committed", held>>20, chunks)
	}
	s.Flush()
	if got, err := s.Chunk("s", chunks); err != nil || len(got) != size {
		t.Fatalf("last chunk: %d bytes, %v", len(got), err)
	}
}
