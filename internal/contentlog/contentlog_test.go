package contentlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/contentlog"
)

func open(t *testing.T, dir string, opts contentlog.Options) *contentlog.Log {
	t.Helper()
	l, err := contentlog.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendOne(t *testing.T, l *contentlog.Log, rec string) contentlog.Ref {
	t.Helper()
	refs, err := l.Append([][]byte{[]byte(rec)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return refs[0]
}

func segPath(dir string, id uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016x.seg", id))
}

// scanAll returns the payloads Scan reports from the start, "!" for damage.
func scanAll(t *testing.T, l *contentlog.Log) []string {
	t.Helper()
	var got []string
	err := l.Scan(contentlog.Pos{}, func(_ contentlog.Ref, p []byte, err error) error {
		switch {
		case errors.Is(err, contentlog.ErrDamaged):
			got = append(got, "!")
		case err != nil:
			return err
		default:
			got = append(got, string(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := contentlog.Open(dir, contentlog.Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var refs []contentlog.Ref
	var want []string
	for i := range 100 {
		rec := fmt.Sprintf("record %d %s", i, bytes.Repeat([]byte{'x'}, i*7))
		want = append(want, rec)
		refs = append(refs, appendOne(t, l, rec))
	}
	big := string(bytes.Repeat([]byte("big"), 3000)) // larger than a segment
	want = append(want, big)
	refs = append(refs, appendOne(t, l, big))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([][]byte{[]byte("late")}, nil); !errors.Is(err, contentlog.ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}

	l = open(t, dir, contentlog.Options{SegmentSize: 4096})
	for i, ref := range refs {
		got, err := l.Read(ref)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if string(got) != want[i] {
			t.Fatalf("read %d = %q, want %q", i, got, want[i])
		}
	}
	if got := scanAll(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan = %d records, want %d", len(got), len(want))
	}
	// Appends go on after the reopened end.
	ref := appendOne(t, l, "after")
	if !refs[len(refs)-1].Pos().Less(ref.Pos()) {
		t.Fatalf("appended at %+v, before the last record %+v", ref, refs[len(refs)-1])
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("segments = %d, want several of 4096 bytes", len(l.Segments()))
	}
}

func TestGroupCommitSharesSyncs(t *testing.T) {
	l := open(t, t.TempDir(), contentlog.Options{})
	const writers, each = 32, 20
	var wg sync.WaitGroup
	var order []contentlog.Ref
	var mu sync.Mutex
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rec := fmt.Sprintf("w%d-%d", w, i)
				refs, err := l.Append([][]byte{[]byte(rec)}, func(refs []contentlog.Ref) {
					mu.Lock()
					order = append(order, refs...)
					mu.Unlock()
				})
				if err != nil {
					errs <- err
					return
				}
				got, err := l.Read(refs[0])
				if err != nil || string(got) != rec {
					errs <- fmt.Errorf("read back %q: %q, %v", rec, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Records != writers*each {
		t.Fatalf("records = %d, want %d", st.Records, writers*each)
	}
	if st.Syncs != st.Batches || st.Syncs >= st.Records {
		t.Fatalf("syncs %d, batches %d for %d records: want one sync per batch, fewer than records", st.Syncs, st.Batches, st.Records)
	}
	// The durable callbacks run in log order.
	for i := 1; i < len(order); i++ {
		if !order[i-1].Pos().Less(order[i].Pos()) {
			t.Fatalf("callback %d at %+v after %+v", i, order[i], order[i-1])
		}
	}
}

// damage rewrites the bytes of seg at off with b.
func damage(t *testing.T, dir string, seg uint64, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(segPath(dir, seg), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestDamage(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hurt damages the segment holding refs a, b, c (written in
		// that order) and returns what a scan of it should then show.
		hurt     func(t *testing.T, dir string, a, b, c contentlog.Ref) []string
		readable []bool // a, b, c readable afterwards
	}{
		{
			name: "TornLastRecord",
			hurt: func(t *testing.T, dir string, a, b, c contentlog.Ref) []string {
				// The last sectors of the last record never made it.
				damage(t, dir, c.Seg, c.End()-3, make([]byte, 3))
				return []string{"a", "bbbbbbbb"}
			},
			readable: []bool{true, true, false},
		},
		{
			name: "ZeroedTail",
			hurt: func(t *testing.T, dir string, a, b, c contentlog.Ref) []string {
				damage(t, dir, b.Seg, b.Off, make([]byte, c.End()-b.Off))
				return []string{"a"}
			},
			readable: []bool{true, false, false},
		},
		{
			name: "FlippedBitInMiddleRecord",
			hurt: func(t *testing.T, dir string, a, b, c contentlog.Ref) []string {
				f, _ := os.ReadFile(segPath(dir, b.Seg))
				p := b.Off + contentlog.HeaderSize + 2
				damage(t, dir, b.Seg, p, []byte{f[p] ^ 0x10})
				return []string{"a", "!", "ccc"}
			},
			readable: []bool{true, false, true},
		},
		{
			name: "FlippedBitInMiddleHeader",
			hurt: func(t *testing.T, dir string, a, b, c contentlog.Ref) []string {
				f, _ := os.ReadFile(segPath(dir, b.Seg))
				p := b.Off + 5 // the length
				damage(t, dir, b.Seg, p, []byte{f[p] ^ 0x01})
				// Nothing tells where c starts any more: the log ends at b.
				return []string{"a"}
			},
			readable: []bool{true, false, true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := contentlog.Open(dir, contentlog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := appendOne(t, l, "a")
			b := appendOne(t, l, "bbbbbbbb")
			c := appendOne(t, l, "ccc")
			l.Close()
			want := tc.hurt(t, dir, a, b, c)

			l = open(t, dir, contentlog.Options{})
			if got := scanAll(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("scan = %q, want %q", got, want)
			}
			for i, ref := range []contentlog.Ref{a, b, c} {
				got, err := l.Read(ref)
				if tc.readable[i] {
					if err != nil {
						t.Fatalf("read %d: %v", i, err)
					}
					continue
				}
				if !errors.Is(err, contentlog.ErrDamaged) {
					t.Fatalf("read %d = %q, %v; want ErrDamaged", i, got, err)
				}
			}
		})
	}
}

// A torn tail is dropped: the next append takes its place, and a reopened
// log reads exactly what was acknowledged.
func TestTornTailOverwritten(t *testing.T) {
	dir := t.TempDir()
	l, _ := contentlog.Open(dir, contentlog.Options{})
	appendOne(t, l, "kept")
	torn := appendOne(t, l, "torn-record-payload")
	l.Close()
	damage(t, dir, torn.Seg, torn.End()-1, []byte{0})

	l, _ = contentlog.Open(dir, contentlog.Options{})
	next := appendOne(t, l, "next")
	if next.Off != torn.Off {
		t.Fatalf("next record at %d, want the torn one's place %d", next.Off, torn.Off)
	}
	l.Close()
	l = open(t, dir, contentlog.Options{})
	if got := scanAll(t, l); fmt.Sprint(got) != "[kept next]" {
		t.Fatalf("scan = %q", got)
	}
}

// After a power loss that kept a record but lost the page of the one
// before it (never acknowledged, either of them), the log ends before the
// lost one. The record sent again in its place, as long as it was, must not
// make the kept one, which follows it exactly, part of the log: appends go
// on in a new segment. The kept one lies a whole window past the end too.
func TestRecordPastTheEndIsNeverJoined(t *testing.T) {
	for _, name := range []string{"Adjacent", "PastAWindow"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, contentlog.Options{})
			appendOne(t, l, "kept")
			lostText := "lost-record"
			if name == "PastAWindow" {
				lostText = strings.Repeat("l", 3<<20)
			}
			lost := appendOne(t, l, lostText)
			appendOne(t, l, "after-the-lost-one")
			l.Close()
			// The lost record's header page reads as zeros.
			damage(t, dir, lost.Seg, lost.Off, make([]byte, 16))

			l = open(t, dir, contentlog.Options{})
			again := appendOne(t, l, lostText)
			if again.Seg == lost.Seg {
				t.Fatalf("the record sent again went to segment %d at %d, before a record never acknowledged", again.Seg, again.Off)
			}
			l.Close()
			l = open(t, dir, contentlog.Options{})
			defer l.Close()
			got := scanAll(t, l)
			if len(got) != 2 || got[0] != "kept" || got[1] != lostText {
				t.Fatalf("scan = %d records %.40q, want kept and the record sent again", len(got), got)
			}
		})
	}
}

// A clean log keeps appending to its last segment after a restart.
func TestReopenedLogAppendsInPlace(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, contentlog.Options{})
	first := appendOne(t, l, "first")
	l.Close()
	l = open(t, dir, contentlog.Options{})
	defer l.Close()
	if next := appendOne(t, l, "next"); next.Seg != first.Seg || next.Off != first.End() {
		t.Fatalf("after a clean restart the next record is at %d:%d, want %d:%d", next.Seg, next.Off, first.Seg, first.End())
	}
}

func TestDiskFull(t *testing.T) {
	for _, op := range []string{"allocate", "write", "sync"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			var mu sync.Mutex
			failing := ""
			opts := contentlog.WithFaults(contentlog.Options{SegmentSize: 1024}, func(o string) error {
				mu.Lock()
				defer mu.Unlock()
				if o == failing {
					return syscall.ENOSPC
				}
				return nil
			})
			l := open(t, dir, opts)
			var acked []contentlog.Ref
			var want []string
			for i := range 5 {
				rec := fmt.Sprintf("acked-%d-%s", i, bytes.Repeat([]byte{'a'}, 300))
				acked = append(acked, appendOne(t, l, rec))
				want = append(want, rec)
			}
			mu.Lock()
			failing = op
			mu.Unlock()
			// Enough refused appends to need a new segment on the way.
			for range 5 {
				called := false
				_, err := l.Append([][]byte{bytes.Repeat([]byte{'r'}, 300)}, func([]contentlog.Ref) { called = true })
				if called != (err == nil) {
					t.Fatalf("durable called %v for an append that returned %v", called, err)
				}
				if !errors.Is(err, syscall.ENOSPC) {
					// A write of the current segment does not allocate.
					if op == "allocate" && err == nil {
						continue
					}
					t.Fatalf("append on a full disk: %v, want ENOSPC", err)
				}
			}
			mu.Lock()
			failing = ""
			mu.Unlock()
			acked = append(acked, appendOne(t, l, "after"))
			want = append(want, "after")
			l.Close()

			l = open(t, dir, contentlog.Options{SegmentSize: 1024})
			for i, ref := range acked {
				got, err := l.Read(ref)
				if err != nil || string(got) != want[i] {
					t.Fatalf("acknowledged record %d: %q, %v", i, got, err)
				}
			}
		})
	}
}

func TestReclaim(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, contentlog.Options{SegmentSize: 64})
	a := appendOne(t, l, string(bytes.Repeat([]byte{'a'}, 40)))
	b := appendOne(t, l, string(bytes.Repeat([]byte{'b'}, 40)))
	if a.Seg == b.Seg {
		t.Fatal("records share a segment of 64 bytes")
	}
	before := l.Stats().Bytes
	if err := l.Reclaim(a.Seg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segPath(dir, a.Seg)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reclaimed segment still there: %v", err)
	}
	if _, err := l.Read(a); !errors.Is(err, contentlog.ErrDamaged) {
		t.Fatalf("read of a reclaimed record: %v", err)
	}
	if got := l.Stats().Bytes; got != before-a.Size() {
		t.Fatalf("bytes after reclaim = %d, want %d", got, before-a.Size())
	}
	if err := l.Reclaim(b.Seg); err == nil {
		t.Fatal("reclaimed the segment being appended to")
	}
}

// FuzzDamage damages a log at random and checks that nothing damaged is ever
// returned as data: every read returns exactly what was written or fails.
func FuzzDamage(f *testing.F) {
	f.Add(uint16(20), []byte{0xff}, uint8(3))
	f.Add(uint16(0), []byte{0, 0, 0, 0}, uint8(1))
	f.Add(uint16(60), make([]byte, 40), uint8(5))
	f.Fuzz(func(t *testing.T, at uint16, junk []byte, n uint8) {
		dir := t.TempDir()
		l, err := contentlog.Open(dir, contentlog.Options{SegmentSize: 512})
		if err != nil {
			t.Fatal(err)
		}
		var refs []contentlog.Ref
		var want []string
		for i := range int(n%8) + 1 {
			rec := fmt.Sprintf("rec-%d-%s", i, bytes.Repeat([]byte{byte('a' + i)}, i*9))
			refs = append(refs, appendOne(t, l, rec))
			want = append(want, rec)
		}
		l.Close()
		seg := refs[0].Seg
		if len(junk) > 256 {
			junk = junk[:256]
		}
		damage(t, dir, seg, int64(at%512), junk)

		l, err = contentlog.Open(dir, contentlog.Options{SegmentSize: 512})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for i, ref := range refs {
			got, err := l.Read(ref)
			if err == nil && string(got) != want[i] {
				t.Fatalf("read %d = %q, want %q or an error", i, got, want[i])
			}
		}
		scanned := map[string]bool{}
		for _, w := range want {
			scanned[w] = true
		}
		for _, s := range scanAll(t, l) {
			if s != "!" && !scanned[s] {
				t.Fatalf("scan returned %q, never written", s)
			}
		}
		// The log goes on after any damage.
		refs, err = l.Append([][]byte{[]byte("after")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := l.Read(refs[0]); err != nil || string(got) != "after" {
			t.Fatalf("append after damage: %q, %v", got, err)
		}
	})
}

// TestAppendParts: a record given in parts, large ones written from where
// they are and small ones gathered, is read back, scanned and reopened as
// the one payload they make, whatever mix of records shares the batch.
func TestAppendParts(t *testing.T) {
	dir := t.TempDir()
	l, err := contentlog.Open(dir, contentlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	recs := [][][]byte{
		{[]byte("head"), big('a', 200<<10)},
		{[]byte("small"), []byte(" and small")},
		{big('b', 64<<10), []byte("tail"), big('c', 70<<10), []byte("end")},
		{},
		{big('d', 1<<20)},
	}
	var want []string
	for _, r := range recs {
		want = append(want, string(bytes.Join(r, nil)))
	}
	// Concurrent appends share batches: every record must come out whole
	// and in its place whichever batch it went in.
	var wg sync.WaitGroup
	refs := make([][]contentlog.Ref, 8)
	for g := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.AppendParts(recs, nil)
			if err != nil {
				t.Error(err)
			}
			refs[g] = r
		}()
	}
	wg.Wait()
	for _, rs := range refs {
		for i, ref := range rs {
			got, err := l.Read(ref)
			if err != nil || string(got) != want[i] {
				t.Fatalf("record %d read back as %d bytes (%v), want %d", i, len(got), err, len(want[i]))
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, contentlog.Options{})
	got := scanAll(t, l)
	if len(got) != len(refs)*len(recs) {
		t.Fatalf("scan found %d records after reopening, want %d", len(got), len(refs)*len(recs))
	}
	for i, g := range got {
		if g != want[i%len(recs)] {
			t.Fatalf("scanned record %d is %d bytes, want %d", i, len(g), len(want[i%len(recs)]))
		}
	}
}

// Records enqueued before anyone waits go into one batch, in the order they
// were enqueued, with one sync.
func TestEnqueueSharesABatch(t *testing.T) {
	l := open(t, t.TempDir(), contentlog.Options{})
	var qs []*contentlog.Queued
	for i := range 4 {
		q, err := l.Enqueue([][][]byte{{[]byte(fmt.Sprintf("chunk-%d", i))}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	before := l.Stats()
	// Waited for in reverse: the first one leads the batch whoever waits
	// first.
	var wg sync.WaitGroup
	refs := make([][]contentlog.Ref, len(qs))
	errs := make([]error, len(qs))
	for i := len(qs) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs[i], errs[i] = qs[i].Wait()
		}()
	}
	wg.Wait()
	for i := range qs {
		if errs[i] != nil {
			t.Fatalf("record %d: %v", i, errs[i])
		}
		if i > 0 && !refs[i-1][0].Pos().Less(refs[i][0].Pos()) {
			t.Fatalf("record %d at %+v, before record %d at %+v", i, refs[i][0], i-1, refs[i-1][0])
		}
	}
	if got := l.Stats().Syncs - before.Syncs; got != 1 {
		t.Fatalf("%d syncs for 4 records enqueued together, want 1", got)
	}
	if got := scanAll(t, l); len(got) != 4 || got[0] != "chunk-0" || got[3] != "chunk-3" {
		t.Fatalf("log holds %q", got)
	}
}

// A record enqueued after one whose batch fails is refused unwritten, even
// when its own batch would have been written; records that do not depend
// on the failed one are written.
func TestEnqueueAfterFailed(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	fail := false
	opts := contentlog.WithFaults(contentlog.Options{}, func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "sync" && fail {
			fail = false // this batch only
			return syscall.EIO
		}
		return nil
	})
	l := open(t, dir, opts)
	enqueue := func(rec string, after *contentlog.Queued) *contentlog.Queued {
		t.Helper()
		q, err := l.Enqueue([][][]byte{{[]byte(rec)}}, nil, after)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	// 1 leads the failing batch; 2, after it, is taken by the next batch
	// (queued while 1 is written, as a pipelined chunk is), with 3, which
	// depends on nothing, and 4, after 2.
	q1 := enqueue("seq-1", nil)
	if _, err := q1.Wait(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed batch: %v, want EIO", err)
	}
	q2 := enqueue("seq-2", q1)
	q3 := enqueue("other", nil)
	q4 := enqueue("seq-3", q2)
	for _, q := range []*contentlog.Queued{q2, q4} {
		if _, err := q.Wait(); !errors.Is(err, contentlog.ErrAfterFailed) {
			t.Fatalf("record after a failed one: %v, want ErrAfterFailed", err)
		}
	}
	if _, err := q3.Wait(); err != nil {
		t.Fatalf("independent record: %v", err)
	}
	l.Close()
	l = open(t, dir, contentlog.Options{})
	for _, rec := range scanAll(t, l) {
		if rec == "seq-2" || rec == "seq-3" {
			t.Fatalf("refused record %q is in the log: %q", rec, scanAll(t, l))
		}
	}
}
