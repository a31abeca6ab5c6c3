package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/store"
	bolt "go.etcd.io/bbolt"
)

func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openDeferred opens path with index commits deferred for an hour, so
// that only a test's own writes (or a crash image) commit them.
func openDeferred(t testing.TB, path string) *store.Store {
	t.Helper()
	s, err := store.Open(path, store.Options{DeferDelay: time.Hour})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB) *store.Store {
	t.Helper()
	return openStore(t, filepath.Join(t.TempDir(), "journal.db"))
}

func TestMetaRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		meta []byte
	}{
		{"Empty", []byte{}},
		{"Nil", nil},
		{"Small", []byte(`{"state":"open"}`)},
		{"Binary", []byte{0, 1, 2, 0xff, 0}},
		{"LargerThanPage", bytes.Repeat([]byte("m"), 100<<10)},
	}
	s := newStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.PutMeta(tt.name, tt.meta); err != nil {
				t.Fatalf("PutMeta: %v", err)
			}
			got, err := s.Meta(tt.name)
			if err != nil {
				t.Fatalf("Meta: %v", err)
			}
			if got == nil || !bytes.Equal(got, tt.meta) {
				t.Fatalf("Meta = %q (nil %v), want %q", got, got == nil, tt.meta)
			}
		})
	}

	t.Run("Replace", func(t *testing.T) {
		if err := s.PutMeta("r", []byte("one")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutMeta("r", []byte("two")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta("r"); err != nil || string(got) != "two" {
			t.Fatalf("Meta = %q, %v; want two", got, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := s.Meta("nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Meta(unknown) error = %v, want ErrNotFound", err)
		}
	})
	t.Run("CopyIsPrivate", func(t *testing.T) {
		got, _ := s.Meta("Small")
		got[0] = 'X'
		if again, _ := s.Meta("Small"); again[0] == 'X' {
			t.Fatal("modifying Meta's result changed the stored value")
		}
	})
}

func TestChunkRoundTrip(t *testing.T) {
	s := newStore(t)
	chunks := [][]byte{[]byte("hello "), {}, bytes.Repeat([]byte{7}, 10<<10), []byte("world")}
	for i, c := range chunks {
		if err := s.Append("a", uint64(i), c, []byte(fmt.Sprint("meta", i))); err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
	}
	for i, want := range chunks {
		got, err := s.Chunk("a", uint64(i))
		if err != nil {
			t.Fatalf("Chunk(%d): %v", i, err)
		}
		if got == nil || !bytes.Equal(got, want) {
			t.Fatalf("Chunk(%d) = %d bytes, want %d", i, len(got), len(want))
		}
	}
	if got, err := s.Meta("a"); err != nil || string(got) != "meta3" {
		t.Fatalf("Meta after Appends = %q, %v; want the last Append's meta3", got, err)
	}

	for _, tt := range []struct {
		name string
		id   string
		seq  uint64
	}{
		{"UnknownSession", "b", 0},
		{"UnknownSeq", "a", 99},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Chunk(tt.id, tt.seq); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Chunk(%q, %d) error = %v, want ErrNotFound", tt.id, tt.seq, err)
			}
		})
	}
}

func TestAppendIdempotent(t *testing.T) {
	s := newStore(t)
	for range 3 {
		if err := s.Append("a", 1, []byte("chunk"), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Chunks, 1; got != want {
		t.Fatalf("Chunks = %d, want %d", got, want)
	}
	if got, want := st.Sessions, 1; got != want {
		t.Fatalf("Sessions = %d, want %d", got, want)
	}
	var buf bytes.Buffer
	if _, err := s.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "chunk" {
		t.Fatalf("content = %q, %v; want chunk", buf.String(), err)
	}
}

func TestInvalidArguments(t *testing.T) {
	s := newStore(t)
	long := strings.Repeat("x", bolt.MaxKeySize+1)
	tests := []struct {
		name string
		fn   func() error
	}{
		{"AppendEmptyID", func() error { return s.Append("", 0, nil, nil) }},
		{"AppendLongID", func() error { return s.Append(long, 0, nil, nil) }},
		{"PutMetaEmptyID", func() error { return s.PutMeta("", nil) }},
		{"DeleteEmptyID", func() error { return s.Delete("") }},
		{"CopyRangeNegativeOffset", func() error { _, err := s.CopyRange("a", io.Discard, -1, 1); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.fn(); err == nil {
				t.Fatal("got nil error")
			}
		})
	}
}

// TestCopyRange checks CopyRange against slicing the concatenation, over
// random chunk sizes (including empty chunks, chunks larger than a copy
// round, and gaps in seq) and many ranges.
func TestCopyRange(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var content [32]byte
	binary.LittleEndian.PutUint64(content[:], seed)
	bytesRNG := rand.NewChaCha8(content)

	s := newStore(t)
	for session := range 3 {
		id := fmt.Sprint("s", session)
		var all []byte
		seq := uint64(rng.IntN(3))
		for range 20 + rng.IntN(150) {
			var size int
			switch rng.IntN(20) {
			case 0, 1:
				size = 0
			case 2:
				size = 64<<10 + rng.IntN(64<<10) // more than a copy round
			default:
				size = 1 + rng.IntN(3000)
			}
			chunk := make([]byte, size)
			bytesRNG.Read(chunk)
			if err := s.Append(id, seq, chunk, nil); err != nil {
				t.Fatal(err)
			}
			all = append(all, chunk...)
			seq += 1 + uint64(rng.IntN(2)) // gaps are allowed
		}
		total := int64(len(all))

		var buf bytes.Buffer
		check := func(off, n int64) {
			t.Helper()
			end := total
			if n >= 0 && off+n < total {
				end = off + n
			}
			var want []byte
			if off < end {
				want = all[off:end]
			}
			buf.Reset()
			got, err := s.CopyRange(id, &buf, off, n)
			if err != nil {
				t.Fatalf("%s: CopyRange(off %d, n %d): %v", id, off, n, err)
			}
			if got != int64(buf.Len()) || !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("%s: CopyRange(off %d, n %d) = %d bytes (%d written), want %d (total %d)",
					id, off, n, got, buf.Len(), len(want), total)
			}
		}
		for _, c := range [][2]int64{
			{0, -1}, {0, 0}, {0, 1}, {0, total}, {0, total + 1},
			{total, -1}, {total, 5}, {total + 10, -1}, {total - 1, -1}, {total - 1, 1},
		} {
			check(c[0], c[1])
		}
		for range 150 {
			off := rng.Int64N(total + 2)
			n := int64(-1)
			if rng.IntN(4) > 0 {
				n = rng.Int64N(total - off + 3)
			}
			check(off, n)
		}
	}
}

func TestCopyRangeSessions(t *testing.T) {
	s := newStore(t)
	if err := s.PutMeta("metaonly", []byte("m")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		id      string
		wantErr error
	}{
		{"Unknown", "nope", store.ErrNotFound},
		{"NoChunks", "metaonly", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := s.CopyRange(tt.id, io.Discard, 0, -1)
			if !errors.Is(err, tt.wantErr) || n != 0 {
				t.Fatalf("CopyRange = %d, %v; want 0, %v", n, err, tt.wantErr)
			}
		})
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		m := w.n
		w.n = 0
		return m, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestCopyRangeWriterError(t *testing.T) {
	s := newStore(t)
	for i := range 200 {
		if err := s.Append("a", uint64(i), make([]byte, 1024), nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.CopyRange("a", &failingWriter{n: 100 << 10}, 0, -1)
	if err == nil || n != 100<<10 {
		t.Fatalf("CopyRange = %d, %v; want %d and the writer's error", n, err, 100<<10)
	}
}

// TestCopyRangeDuringWrites copies while another goroutine appends, to check
// that CopyRange does not hold a transaction across writes to w and that the
// end is fixed when the call starts.
func TestCopyRangeDuringWrites(t *testing.T) {
	s := newStore(t)
	for i := range 300 {
		if err := s.Append("a", uint64(i), bytes.Repeat([]byte{byte(i)}, 1024), nil); err != nil {
			t.Fatal(err)
		}
	}
	w := writerFunc(func(p []byte) (int, error) {
		// An Append from inside Write would deadlock if CopyRange held
		// a transaction that the commit had to wait for.
		return len(p), s.Append("b", 0, p[:1], nil)
	})
	n, err := s.CopyRange("a", w, 0, -1)
	if err != nil || n != 300*1024 {
		t.Fatalf("CopyRange = %d, %v; want %d", n, err, 300*1024)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestConcurrentAppends has 64 goroutines append to 64 sessions at once and
// checks, after reopening, that every chunk is there in order.
func TestConcurrentAppends(t *testing.T) {
	const (
		writers = 64
		chunks  = 40
	)
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(w, i int) []byte {
		return []byte(fmt.Sprintf("writer %d chunk %d;", w, i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprint("session-", w)
			for i := range chunks {
				meta := []byte(fmt.Sprint("last=", i))
				if err := s.Append(id, uint64(i), chunk(w, i), meta); err != nil {
					errs <- fmt.Errorf("%s Append(%d): %w", id, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s.Flush() // the index entries still waiting
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Appends share the log's syncs, and their index entries bbolt's
	// commits.
	if st.Log.Records != writers*chunks || st.Log.Syncs >= st.Log.Records || st.Log.Syncs != st.Log.Batches {
		t.Errorf("Stats: %d appends in %d syncs of %d batches; want %d appends sharing syncs", st.Log.Records, st.Log.Syncs, st.Log.Batches, writers*chunks)
	}
	if st.Writes != writers*chunks || st.Commits >= st.Writes/10 {
		t.Errorf("Stats: %d index entries in %d commits; want %d sharing few commits", st.Writes, st.Commits, writers*chunks)
	}
	t.Logf("%d appends in %d syncs; %d commits", st.Log.Records, st.Log.Syncs, st.Commits)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openStore(t, path)
	st, err = s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != writers || st.Chunks != writers*chunks {
		t.Fatalf("after reopen: %d sessions, %d chunks; want %d, %d", st.Sessions, st.Chunks, writers, writers*chunks)
	}
	for w := range writers {
		id := fmt.Sprint("session-", w)
		var want bytes.Buffer
		for i := range chunks {
			want.Write(chunk(w, i))
		}
		var got bytes.Buffer
		if _, err := s.CopyRange(id, &got, 0, -1); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got.String() != want.String() {
			t.Fatalf("%s content:\n%s\nwant:\n%s", id, got.String(), want.String())
		}
		if meta, err := s.Meta(id); err != nil || string(meta) != fmt.Sprint("last=", chunks-1) {
			t.Fatalf("%s meta = %q, %v", id, meta, err)
		}
	}
}

// TestBatchIsolation mixes writes that fail (deleting unknown sessions) into
// batches of writes that succeed: each must get its own result.
func TestBatchIsolation(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := range 20 {
				if w%2 == 0 {
					if err := s.Append(fmt.Sprint("ok", w), uint64(i), []byte("x"), nil); err != nil {
						t.Errorf("Append: %v", err)
					}
				} else if err := s.Delete(fmt.Sprint("missing", w, "-", i)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Delete(unknown) = %v, want ErrNotFound", err)
				}
			}
		})
	}
	wg.Wait()
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Chunks, 16*20; got != want {
		t.Fatalf("Chunks = %d, want %d", got, want)
	}
}

// TestBatchRetry queues writes into one batch with one that fails after
// changing something: the others must succeed on their own, and the failed
// write's change must not survive.
func TestBatchRetry(t *testing.T) {
	s := newStore(t)
	boom := errors.New("boom")
	release := store.HoldCommits(s)
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i == n/2 {
				errs[i] = store.Write(s, func(tx *bolt.Tx) error {
					if err := tx.Bucket([]byte("sessions")).Put([]byte("partial"), nil); err != nil {
						return err
					}
					return boom
				})
				return
			}
			errs[i] = s.PutMeta(fmt.Sprint("s", i), []byte("x"))
		})
	}
	// The committer holds the first write while it waits for the lock.
	for store.Queued(s) < n-1 {
		runtime.Gosched()
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if i == n/2 {
			if !errors.Is(err, boom) {
				t.Errorf("failing write = %v, want boom", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("PutMeta %d in the failed batch = %v, want success on retry", i, err)
		}
	}
	if _, err := s.Meta("partial"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed write's change survived: Meta = %v", err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != n-1 {
		t.Errorf("%d sessions, want %d", st.Sessions, n-1)
	}
	// One batch failed, then each good write committed on its own.
	if st.Commits != n-1 {
		t.Errorf("%d commits, want %d retried alone", st.Commits, n-1)
	}
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	first, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	second, err := store.Open(path, store.Options{})
	if err == nil {
		second.Close()
		t.Fatal("second Open succeeded while the first is open")
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Open error = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("second Open took %v", elapsed)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	third.Close()
}

func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	s := openStore(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 99))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(path, store.Options{}); err == nil {
		s.Close()
		t.Fatal("Open accepted a file with schema version 99")
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name      string
		del       func(s *store.Store, id string) error
		wantMeta  bool
		wantError error // deleting an unknown session
	}{
		{"Delete", (*store.Store).Delete, false, store.ErrNotFound},
		{"DeleteChunks", (*store.Store).DeleteChunks, true, store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			for i := range 100 {
				for _, id := range []string{"a", "b"} {
					if err := s.Append(id, uint64(i), make([]byte, 1000), []byte("meta-"+id)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := tt.del(s, "a"); err != nil {
				t.Fatalf("%s(a): %v", tt.name, err)
			}
			if _, err := s.Chunk("a", 0); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Chunk after %s = %v, want ErrNotFound", tt.name, err)
			}
			meta, err := s.Meta("a")
			if tt.wantMeta && (err != nil || string(meta) != "meta-a") {
				t.Errorf("Meta after %s = %q, %v; want meta-a", tt.name, meta, err)
			}
			if !tt.wantMeta && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Meta after %s = %q, %v; want ErrNotFound", tt.name, meta, err)
			}
			if n, err := s.CopyRange("b", io.Discard, 0, -1); err != nil || n != 100*1000 {
				t.Errorf("other session's content = %d, %v; want %d bytes", n, err, 100*1000)
			}
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := st.Chunks, 100; got != want {
				t.Errorf("Chunks = %d, want %d", got, want)
			}
			if err := tt.del(s, "unknown"); !errors.Is(err, tt.wantError) {
				t.Errorf("%s(unknown) = %v, want %v", tt.name, err, tt.wantError)
			}
			// Appending after DeleteChunks starts the content afresh.
			if err := s.Append("a", 5, []byte("again"), nil); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := s.CopyRange("a", &buf, 0, -1); err != nil || buf.String() != "again" {
				t.Errorf("content after re-Append = %q, %v", buf.String(), err)
			}
		})
	}
	t.Run("DeleteChunksTwice", func(t *testing.T) {
		s := newStore(t)
		if err := s.Append("a", 0, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.DeleteChunks("a"); err != nil {
				t.Fatalf("DeleteChunks: %v", err)
			}
		}
	})
}

func TestForEachMeta(t *testing.T) {
	s := newStore(t)
	const n = 300 // more than one round of ForEachMeta
	want := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("s%04d", i)
		want[id] = "meta " + id
	}
	var wg sync.WaitGroup
	for w := range 16 { // concurrent, so that the puts share commits
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				id := fmt.Sprintf("s%04d", i)
				if err := s.PutMeta(id, []byte(want[id])); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()

	t.Run("All", func(t *testing.T) {
		got := map[string]string{}
		err := s.ForEachMeta(func(id string, meta []byte) error {
			if _, dup := got[id]; dup {
				t.Errorf("%s seen twice", id)
			}
			got[id] = string(meta)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("saw %d sessions, want %d", len(got), len(want))
		}
		for id, m := range want {
			if got[id] != m {
				t.Fatalf("%s: meta %q, want %q", id, got[id], m)
			}
		}
	})
	t.Run("StopsAtError", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		err := s.ForEachMeta(func(string, []byte) error {
			calls++
			if calls == 300 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != 300 {
			t.Fatalf("ForEachMeta = %v after %d calls; want stop after 300", err, calls)
		}
	})
	t.Run("DeleteFromCallback", func(t *testing.T) {
		err := s.ForEachMeta(func(id string, _ []byte) error {
			return s.Delete(id)
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Sessions != 0 {
			t.Fatalf("Sessions = %d after deleting all", st.Sessions)
		}
	})
}

func TestClosed(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), "journal.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutMeta("a", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	tests := []struct {
		name string
		fn   func() error
	}{
		{"Append", func() error { return s.Append("a", 0, nil, nil) }},
		{"PutMeta", func() error { return s.PutMeta("a", nil) }},
		{"Delete", func() error { return s.Delete("a") }},
		{"Meta", func() error { _, err := s.Meta("a"); return err }},
		{"CopyRange", func() error { _, err := s.CopyRange("a", io.Discard, 0, -1); return err }},
		{"ForEachMeta", func() error { return s.ForEachMeta(func(string, []byte) error { return nil }) }},
		{"Stats", func() error { _, err := s.Stats(); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.fn(); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("error = %v, want ErrClosed", err)
			}
		})
	}
}

// TestCloseDrains closes the store while writers are queued: every write
// must either be durable or fail with ErrClosed, never hang or be lost.
func TestCloseDrains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		acked   = map[string]bool{}
		busy    = make(chan struct{})
		busyOne sync.Once
	)
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprint(w, "-", i)
				err := s.PutMeta(id, nil)
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("PutMeta: %v", err)
					return
				}
				mu.Lock()
				acked[id] = true
				if len(acked) == 100 {
					busyOne.Do(func() { close(busy) })
				}
				mu.Unlock()
			}
		})
	}
	<-busy
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s = openStore(t, path)
	for id := range acked {
		if _, err := s.Meta(id); err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
	}
}

// TestAppendMeta checks that the metadata written by the last Append or
// PutMeta, whichever came last, is the session's, wherever it is kept.
func TestAppendMeta(t *testing.T) {
	type step struct {
		op   string // "put", "append", "dropchunks"
		meta string
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"AppendOnly", []step{{"append", "a1"}, {"append", "a2"}}, "a2"},
		{"PutThenAppend", []step{{"put", "p1"}, {"append", "a1"}}, "a1"},
		{"AppendThenPut", []step{{"put", "p1"}, {"append", "a1"}, {"put", "p2"}}, "p2"},
		{"PutAppendPutAppend", []step{{"put", "p1"}, {"append", "a1"}, {"put", "p2"}, {"append", "a2"}}, "a2"},
		{"DeleteChunksKeepsLastAppend", []step{{"put", "p1"}, {"append", "a1"}, {"dropchunks", ""}}, "a1"},
		{"DeleteChunksAfterPut", []step{{"append", "a1"}, {"put", "p1"}, {"dropchunks", ""}}, "p1"},
		{"EmptyAppendMetaKeepsThePrevious", []step{{"put", "p1"}, {"append", ""}}, "p1"},
		{"EmptyAppendMetaAfterAppend", []step{{"put", "p1"}, {"append", "a1"}, {"append", ""}}, "a1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			s := openStore(t, path)
			seq := uint64(0)
			chunks := 0
			for _, st := range tt.steps {
				var err error
				switch st.op {
				case "put":
					err = s.PutMeta("s", []byte(st.meta))
				case "append":
					seq++
					chunks++
					err = s.Append("s", seq, []byte(fmt.Sprint("chunk", seq, ";")), []byte(st.meta))
				case "dropchunks":
					chunks = 0
					err = s.DeleteChunks("s")
				}
				if err != nil {
					t.Fatalf("%s: %v", st.op, err)
				}
			}
			check := func(s *store.Store) {
				t.Helper()
				got, err := s.Meta("s")
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.want {
					t.Fatalf("Meta = %q, want %q", got, tt.want)
				}
				var seen []string
				if err := s.ForEachMeta(func(id string, meta []byte) error {
					seen = append(seen, id+"="+string(meta))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if want := []string{"s=" + tt.want}; fmt.Sprint(seen) != fmt.Sprint(want) {
					t.Fatalf("ForEachMeta saw %q, want %q", seen, want)
				}
				st, err := s.Stats()
				if err != nil {
					t.Fatal(err)
				}
				if st.Sessions != 1 || st.Chunks != chunks {
					t.Fatalf("Stats: %d sessions, %d chunks; want 1, %d", st.Sessions, st.Chunks, chunks)
				}
				var content bytes.Buffer
				if _, err := s.CopyRange("s", &content, 0, -1); err != nil {
					t.Fatal(err)
				}
				var want strings.Builder
				for i := seq - uint64(chunks) + 1; i <= seq && chunks > 0; i++ {
					fmt.Fprint(&want, "chunk", i, ";")
				}
				if content.String() != want.String() {
					t.Fatalf("content %q, want %q", content.String(), want.String())
				}
			}
			check(s)
			s.Close()
			check(openStore(t, path))
		})
	}
}

func TestSchemaMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	s := openStore(t, path)
	if err := s.PutMeta("old", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	schema := func(v uint64) uint64 {
		t.Helper()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var got uint64
		err = db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("meta"))
			got = binary.BigEndian.Uint64(b.Get([]byte("schema")))
			if v == 0 {
				return nil
			}
			return b.Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, v))
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	schema(1) // as written by a version 1 build
	s = openStore(t, path)
	if got, err := s.Meta("old"); err != nil || string(got) != "m1" {
		t.Fatalf("Meta after migration = %q, %v", got, err)
	}
	s.Close()
	if got, want := schema(0), uint64(store.SchemaVersion); got != want {
		t.Fatalf("schema version after Open: got %d, want %d", got, want)
	}
}

// Finish keeps the final metadata and drops the chunks in one commit: a
// reopened store has both changes or, had the commit failed, neither.
func TestFinish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s := openStore(t, path)
	if err := s.Append("a", 1, []byte("chunk"), []byte(`{"stage":"streaming"}`)); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Stats()
	if err := s.Finish("a", []byte(`{"stage":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	after, _ := s.Stats()
	if got := after.Commits - before.Commits; got != 1 {
		t.Fatalf("Finish took %d commits, want 1", got)
	}
	s.Close()
	s = openStore(t, path)
	if meta, err := s.Meta("a"); err != nil || string(meta) != `{"stage":"completed"}` {
		t.Fatalf("Meta after Finish = %q, %v", meta, err)
	}
	if _, err := s.Chunk("a", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Chunk after Finish: %v, want ErrNotFound", err)
	}
	// A session that never had chunks finishes too.
	if err := s.Finish("b", []byte(`{"stage":"aborted"}`)); err != nil {
		t.Fatal(err)
	}
}

// FinishLater costs no commit of its own while other writes come: it rides
// the next one, before it, so that write (of the same session here) is what
// stays.
func TestFinishLaterRidesTheNextCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	// The timer must not commit it alone while the test is between steps.
	s, err := store.Open(path, store.Options{DeferDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Append("a", 1, []byte("chunk"), []byte(`{"stage":"streaming"}`)); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Stats()
	done := make(chan error, 1)
	s.FinishLater("a", []byte(`{"stage":"completed"}`), func(err error) { done <- err })
	select {
	case err := <-done:
		t.Fatalf("FinishLater committed at once (%v); it should wait for the next commit", err)
	default:
	}
	if err := s.PutMeta("a", []byte(`{"stage":"completed","undone":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after, _ := s.Stats()
	if got := after.Commits - before.Commits; got != 1 {
		t.Fatalf("FinishLater and the next write took %d commits, want 1", got)
	}
	s.Close()
	s = openStore(t, path)
	if meta, err := s.Meta("a"); err != nil || string(meta) != `{"stage":"completed","undone":true}` {
		t.Fatalf("Meta = %q, %v; want the later write's", meta, err)
	}
	if _, err := s.Chunk("a", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Chunk after FinishLater: %v, want ErrNotFound", err)
	}
}

// Without another write, FinishLater commits by itself within a second, and
// Close commits what still waits.
func TestFinishLaterCommitsAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orion.db")
	s, err := store.Open(path, store.Options{DeferDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := s.Append(id, 1, []byte("chunk"), []byte(`{"stage":"streaming"}`)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	s.FinishLater("a", []byte(`{"stage":"completed"}`), func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("FinishLater did not commit without another write")
	}
	s.Close()
	// With a timer that would not fire for an hour, Close commits it.
	if s, err = store.Open(path, store.Options{DeferDelay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	s.FinishLater("b", []byte(`{"stage":"aborted"}`), func(error) {})
	s.Close()
	s = openStore(t, path)
	for id, want := range map[string]string{"a": `{"stage":"completed"}`, "b": `{"stage":"aborted"}`} {
		if meta, err := s.Meta(id); err != nil || string(meta) != want {
			t.Fatalf("Meta(%s) = %q, %v; want %s", id, meta, err, want)
		}
	}
}
