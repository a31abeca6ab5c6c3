package contentlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/contentlog"
)

// oldRec and newRec are records of the same length, so that records
// appended to a recycled segment end exactly where its old ones did, at an
// old header.
func oldRec(i int) string { return fmt.Sprintf("old-%04d-%s", i, strings.Repeat("o", 300)) }
func newRec(i int) string { return fmt.Sprintf("new-%04d-%s", i, strings.Repeat("n", 300)) }

// needSpares skips a test of spare segments where the log keeps none.
func needSpares(t testing.TB, dir string) {
	t.Helper()
	if !contentlog.Prepares(dir) {
		t.Skip("the log prepares no spare segments on this system or file system (" + dir + ")")
	}
}

// noSpares returns options whose fresh spares fail to prepare while
// *failing is set, so that a test decides when a segment is recycled.
func noSpares(size int64, failing *atomic.Bool) contentlog.Options {
	return contentlog.WithFaults(contentlog.Options{SegmentSize: size}, func(op string) error {
		if op == "prepare" && failing.Load() {
			return syscall.ENOSPC
		}
		return nil
	})
}

// TestRecycledSegment: a reclaimed segment becomes the next one with its
// old records still in it. None of them is read as a record of the new
// segment, nothing past the new records is reported as damage, a torn
// record whose tail is old bytes is dropped like any torn tail, and every
// acknowledged record reads back, before and after reopening.
func TestRecycledSegment(t *testing.T) {
	dir := t.TempDir()
	needSpares(t, dir)
	const size = 4096
	var failing atomic.Bool
	failing.Store(true)
	opts := noSpares(size, &failing)
	l := open(t, dir, opts)
	acked := map[contentlog.Ref]string{}
	var first []contentlog.Ref
	for i := 0; ; i++ {
		ref := appendOne(t, l, oldRec(i))
		acked[ref] = oldRec(i)
		if ref.Seg == 4 {
			break
		}
		if ref.Seg == 1 {
			first = append(first, ref)
		}
	}
	contentlog.WaitPrepared(l)
	if st := l.Stats(); st.Prepared != 0 || st.Unprepared != 4 {
		t.Fatalf("stats %+v: want 4 segments reserved with fallocate while no spare could be prepared", st)
	}
	failing.Store(false)
	if err := l.Reclaim(1); err != nil {
		t.Fatal(err)
	}
	for _, ref := range first {
		delete(acked, ref)
	}
	contentlog.WaitPrepared(l)
	if st := l.Stats(); st.Recycled != 1 || st.SpareBytes != size {
		t.Fatalf("stats %+v: want segment 1 recycled as a spare of %d bytes", st, size)
	}
	if _, err := os.Stat(segPath(dir, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 1 still under its name: %v", err)
	}
	old, err := os.ReadFile(filepath.Join(dir, contentlog.SpareName))
	if err != nil {
		t.Fatal(err)
	}

	// Fill segment 4 and go on into 5, the recycled one.
	var recycled []contentlog.Ref
	for i := 0; len(recycled) < 3; i++ {
		ref := appendOne(t, l, newRec(i))
		acked[ref] = newRec(i)
		if ref.Seg == 5 {
			recycled = append(recycled, ref)
		}
	}
	if st := l.Stats(); st.Prepared == 0 {
		t.Fatalf("stats %+v: segment 5 was not begun on the spare", st)
	}
	last := recycled[len(recycled)-1]
	seg5, err := os.ReadFile(segPath(dir, 5))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seg5[last.End():last.End()+100], old[last.End():last.End()+100]) {
		t.Fatal("segment 5 does not hold segment 1's old records past its own: not recycled")
	}
	if !bytes.Contains(seg5[last.End():], []byte("old-")) {
		t.Fatal("no old record left past the new ones")
	}
	checkAcked := func(l *contentlog.Log) {
		t.Helper()
		for ref, want := range acked {
			if got, err := l.Read(ref); err != nil || string(got) != want {
				t.Fatalf("read %+v = %.20q, %v; want %.20q", ref, got, err, want)
			}
		}
		for _, ref := range first {
			if _, err := l.Read(ref); !errors.Is(err, contentlog.ErrDamaged) {
				t.Fatalf("read of a record of the reclaimed segment: %v", err)
			}
		}
		got := scanAll(t, l)
		if len(got) != len(acked) {
			t.Fatalf("scan found %d records, want the %d acknowledged", len(got), len(acked))
		}
		values := map[string]bool{}
		for _, v := range acked {
			values[v] = true
		}
		for _, g := range got {
			if !values[g] {
				t.Fatalf("scan returned %.20q, no acknowledged record", g)
			}
		}
	}
	checkAcked(l)
	l.Close()
	l = open(t, dir, opts)
	checkAcked(l)
	if end := l.End(); end != (contentlog.Pos{Seg: 5, Off: last.End()}) {
		t.Fatalf("reopened log ends at %+v, want just past the last record %+v", end, last)
	}

	// The last record torn: its last bytes are still the old segment's.
	l.Close()
	damage(t, dir, 5, last.End()-10, old[last.End()-10:last.End()])
	delete(acked, last)
	l = open(t, dir, opts)
	checkAcked(l)
	if _, err := l.Read(last); !errors.Is(err, contentlog.ErrDamaged) {
		t.Fatalf("read of the torn record: %v", err)
	}
	next := appendOne(t, l, "after the torn one")
	if next != (contentlog.Ref{Seg: 5, Off: last.Off, Len: next.Len}) {
		t.Fatalf("next record at %+v, want the torn one's place %+v", next, last.Pos())
	}
	acked[next] = "after the torn one"
	l.Close()
	l = open(t, dir, opts)
	checkAcked(l)
}

// A crash at each point of recycling or preparing leaves a log that opens
// with every record it held, whatever files the crash left: a half
// prepared spare is dropped, a ready one is used, and a spare renamed to be
// the next segment before anything was written to it is an empty segment.
func TestCrashWhilePreparing(t *testing.T) {
	const size = 4096
	for _, tc := range []struct {
		name string
		// crash arranges the files as the crash left them: dir holds
		// segments 1 and 2 and spare, what segment 1 held.
		crash func(t *testing.T, dir string, spare []byte)
		// used: the next segment is begun on the spare left.
		used bool
	}{
		{"WhileFillingZeros", func(t *testing.T, dir string, spare []byte) {
			write(t, filepath.Join(dir, contentlog.PrepareName), spare[:size/2])
		}, false},
		{"AfterRecyclingBeforePreparing", func(t *testing.T, dir string, spare []byte) {
			write(t, filepath.Join(dir, contentlog.PrepareName), spare)
		}, false},
		{"SpareReady", func(t *testing.T, dir string, spare []byte) {
			write(t, filepath.Join(dir, contentlog.SpareName), spare)
		}, true},
		{"SpareRenamedToNextSegment", func(t *testing.T, dir string, spare []byte) {
			write(t, segPath(dir, 3), spare)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var failing atomic.Bool
			failing.Store(true)
			opts := noSpares(size, &failing)
			l := open(t, dir, opts)
			acked := map[contentlog.Ref]string{}
			for i := 0; ; i++ {
				ref := appendOne(t, l, oldRec(i))
				if ref.Seg == 3 {
					break
				}
				acked[ref] = oldRec(i)
			}
			l.Close()
			// Segment 3 never was (the log ended in 2); segment 1
			// was reclaimed and its bytes are what the crash left.
			os.Remove(segPath(dir, 3))
			spare, err := os.ReadFile(segPath(dir, 1))
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(segPath(dir, 1))
			for ref := range acked {
				if ref.Seg == 1 {
					delete(acked, ref)
				}
			}
			tc.crash(t, dir, spare)

			l = open(t, dir, opts)
			if got := scanAll(t, l); len(got) != len(acked) {
				t.Fatalf("scan after the crash: %d records, want %d", len(got), len(acked))
			}
			if _, err := os.Stat(filepath.Join(dir, contentlog.PrepareName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a half prepared spare is left: %v", err)
			}
			for i := 0; ; i++ {
				ref := appendOne(t, l, newRec(i))
				acked[ref] = newRec(i)
				if ref.Seg > 3 || ref.Seg == 3 && ref.Off > size/2 {
					break
				}
			}
			if st := l.Stats(); (st.Prepared == 1) != tc.used {
				t.Fatalf("stats %+v: spare used %v, want %v", st, st.Prepared == 1, tc.used)
			}
			for _, reopen := range []bool{false, true} {
				if reopen {
					l.Close()
					l = open(t, dir, opts)
				}
				for ref, want := range acked {
					if got, err := l.Read(ref); err != nil || string(got) != want {
						t.Fatalf("read %+v = %.20q, %v", ref, got, err)
					}
				}
				if got := scanAll(t, l); len(got) != len(acked) {
					t.Fatalf("scan: %d records, want %d", len(got), len(acked))
				}
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A spare is prepared one segment ahead (once the segment being appended to
// is half full, or an eighth full, at most a MiB, for one reserved with
// fallocate), and the next segment is begun on it: every segment
// after the first is a prepared one while appends do not outrun the
// preparation, and the first, reserved with fallocate, is left for a
// prepared one while it is still mostly empty.
func TestSegmentsPreparedAhead(t *testing.T) {
	dir := t.TempDir()
	needSpares(t, dir)
	const size = 64 << 10
	l := open(t, dir, contentlog.Options{SegmentSize: size})
	appendOne(t, l, strings.Repeat("x", size/4-100))
	contentlog.WaitPrepared(l)
	if st := l.Stats(); st.SpareBytes != size || st.Unprepared != 1 {
		t.Fatalf("stats %+v after a quarter of the first segment: want a spare of %d bytes", st, size)
	}
	ref := appendOne(t, l, "next")
	if ref.Seg != 2 || ref.Off != 0 {
		t.Fatalf("append after the spare is ready at %+v, want the start of segment 2", ref)
	}
	for range 20 {
		contentlog.WaitPrepared(l)
		appendOne(t, l, strings.Repeat("y", size/3))
	}
	st := l.Stats()
	if st.Unprepared != 1 || st.Prepared < 5 {
		t.Fatalf("stats %+v: want every segment after the first begun on a prepared spare", st)
	}
	// A log that stays small prepares nothing.
	small := open(t, t.TempDir(), contentlog.Options{})
	appendOne(t, small, "small")
	contentlog.WaitPrepared(small)
	if st := small.Stats(); st.SpareBytes != 0 {
		t.Fatalf("a log of one small record prepared a spare: %+v", st)
	}
}

// A spare left by the previous run is used by the next, without preparing
// another.
func TestSpareKeptAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	needSpares(t, dir)
	const size = 8192
	l := open(t, dir, contentlog.Options{SegmentSize: size})
	a := appendOne(t, l, strings.Repeat("a", size/2))
	contentlog.WaitPrepared(l)
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, contentlog.SpareName)); err != nil {
		t.Fatalf("no spare left after close: %v", err)
	}
	var failing atomic.Bool
	failing.Store(true)
	l = open(t, dir, noSpares(size, &failing))
	b := appendOne(t, l, strings.Repeat("b", size/2))
	if b.Seg != a.Seg+1 {
		t.Fatalf("second record in segment %d, want %d", b.Seg, a.Seg+1)
	}
	if st := l.Stats(); st.Prepared != 1 || st.Unprepared != 0 {
		t.Fatalf("stats %+v: want the segment begun on the spare from disk", st)
	}
	if _, err := os.Stat(filepath.Join(dir, contentlog.SpareName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spare still there once used: %v", err)
	}
}

// A log whose last segment was reserved with fallocate (as every segment
// was before spares, or when no spare was ready) leaves it for a spare once
// one is ready, if it is still mostly empty.
func TestReservedSegmentLeftAfterReopen(t *testing.T) {
	dir := t.TempDir()
	needSpares(t, dir)
	const size = 64 << 10
	var failing atomic.Bool
	failing.Store(true)
	l := open(t, dir, noSpares(size, &failing))
	a := appendOne(t, l, strings.Repeat("a", size/8))
	contentlog.WaitPrepared(l)
	l.Close()

	l = open(t, dir, contentlog.Options{SegmentSize: size})
	b := appendOne(t, l, "b") // past the eighth: a spare is prepared
	contentlog.WaitPrepared(l)
	c := appendOne(t, l, "c")
	if want := (contentlog.Ref{Seg: a.Seg + 1, Off: 0, Len: 1}); c != want {
		t.Fatalf("append after the spare is ready at %+v, want %+v", c, want)
	}
	for ref, rec := range map[contentlog.Ref]string{a: strings.Repeat("a", size/8), b: "b", c: "c"} {
		if got, err := l.Read(ref); err != nil || string(got) != rec {
			t.Fatalf("read %+v: %.10q, %v", ref, got, err)
		}
	}
}

// A full disk may have room for the spare being prepared or for a segment
// reserved with fallocate, not both: when appends outrun the preparation
// and the reservation finds the disk full, the append waits for the spare
// and goes into it rather than fail.
func TestDiskFullWhilePreparing(t *testing.T) {
	dir := t.TempDir()
	needSpares(t, dir)
	const size = 64 << 10
	gate := make(chan struct{})
	var release sync.Once
	var full atomic.Bool
	l := open(t, dir, contentlog.WithFaults(contentlog.Options{SegmentSize: size}, func(op string) error {
		switch op {
		case "prepare":
			<-gate // the zeros are slow to write
		case "allocate":
			if full.Load() {
				// The preparation ends once the disk is found full.
				release.Do(func() { close(gate) })
				return syscall.ENOSPC
			}
		}
		return nil
	}))
	defer release.Do(func() { close(gate) })
	a := appendOne(t, l, strings.Repeat("a", size/4)) // a spare is being prepared
	full.Store(true)
	big := strings.Repeat("b", size/2+size/4)
	b, err := l.Append([][]byte{[]byte(big)}, nil)
	if err != nil {
		t.Fatalf("append into a new segment while its spare was being prepared on a full disk: %v", err)
	}
	if b[0].Seg != a.Seg+1 || l.Stats().Prepared != 1 {
		t.Fatalf("append at %+v, stats %+v: want it at the start of the spare, segment %d", b[0], l.Stats(), a.Seg+1)
	}
	for ref, rec := range map[contentlog.Ref]string{a: strings.Repeat("a", size/4), b[0]: big} {
		if got, err := l.Read(ref); err != nil || string(got) != rec {
			t.Fatalf("read %+v: %.10q, %v", ref, got, err)
		}
	}
}

// A spare left by a run with smaller segments can never be the next
// segment: it is dropped at Open, not kept (and counted) forever in the
// way of a spare that fits.
func TestSpareTooSmallAfterReopen(t *testing.T) {
	dir := t.TempDir()
	needSpares(t, dir)
	const small, size = 8192, 64 << 10
	l := open(t, dir, contentlog.Options{SegmentSize: small})
	appendOne(t, l, strings.Repeat("a", small/2))
	contentlog.WaitPrepared(l)
	l.Close()
	l = open(t, dir, contentlog.Options{SegmentSize: size})
	appendOne(t, l, strings.Repeat("b", size/2+1)) // a new segment, past half full
	contentlog.WaitPrepared(l)
	if st := l.Stats(); st.SpareBytes != size {
		t.Fatalf("stats %+v: want a spare of %d bytes prepared", st, int64(size))
	}
}
