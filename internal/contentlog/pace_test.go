package contentlog_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/contentlog"
)

// fakeClock is a clock the test moves; preparations read it on their own
// goroutine.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// onPreparedSegment opens a log of segments of size bytes whose clock is
// now, and appends until it writes into its second segment, a prepared
// one.
func onPreparedSegment(t *testing.T, size int64, now *fakeClock) *contentlog.Log {
	t.Helper()
	dir := t.TempDir()
	needSpares(t, dir)
	l := open(t, dir, contentlog.Options{SegmentSize: size})
	contentlog.SetClock(l, now.now)
	for range 17 {
		appendOne(t, l, strings.Repeat("a", 64<<10))
	}
	contentlog.WaitPrepared(l)
	if ref := appendOne(t, l, "b"); ref.Seg != 2 {
		t.Fatalf("second record in segment %d, want 2, the prepared spare", ref.Seg)
	}
	return l
}

// TestPreparationPacedByRate: a segment filled fast gets its next one
// prepared well before it is half full, so that a preparation has the time
// it takes; one filled slowly waits for half; and while large batches come
// none is prepared nor recycled, the next segment reserved with fallocate,
// as zeros would cost the disk more than they save.
func TestPreparationPacedByRate(t *testing.T) {
	const size = 8 << 20
	fill := func(l *contentlog.Log, now *fakeClock, rec int, upTo int64, every time.Duration) {
		t.Helper()
		for n := int64(0); n < upTo; n += int64(rec) {
			now.advance(every)
			appendOne(t, l, strings.Repeat("r", rec))
		}
		contentlog.WaitPrepared(l)
	}
	t.Run("Fast", func(t *testing.T) {
		now := &fakeClock{}
		l := onPreparedSegment(t, size, now)
		fill(l, now, 64<<10, 2<<20, 100*time.Microsecond) // 640 MB/s
		if st := l.Stats(); st.SpareBytes != size {
			t.Fatalf("stats %+v: at a quarter of a segment filled at 640 MB/s, want its next one prepared", st)
		}
	})
	t.Run("Slow", func(t *testing.T) {
		now := &fakeClock{}
		l := onPreparedSegment(t, size, now)
		fill(l, now, 64<<10, 2<<20, 100*time.Millisecond)
		if st := l.Stats(); st.SpareBytes != 0 {
			t.Fatalf("stats %+v: a slow writer got its next segment prepared before half of this one", st)
		}
		fill(l, now, 64<<10, 2<<20+64<<10, 100*time.Millisecond)
		if st := l.Stats(); st.SpareBytes != size {
			t.Fatalf("stats %+v: past half a segment, want the next one prepared", st)
		}
	})
	t.Run("LargeBatches", func(t *testing.T) {
		now := &fakeClock{}
		l := onPreparedSegment(t, size, now)
		before := l.Stats()
		fill(l, now, 1<<20, 6<<20, time.Millisecond)
		if st := l.Stats(); st.SpareBytes != 0 {
			t.Fatalf("stats %+v: batches of a MiB got their next segment prepared", st)
		}
		fill(l, now, 1<<20, 3<<20, time.Millisecond)
		if st := l.Stats(); st.Unprepared != before.Unprepared+1 || st.Prepared != before.Prepared {
			t.Fatalf("stats %+v, before %+v: want the next segment reserved with fallocate", st, before)
		}
		// Nor is a reclaimed segment recycled meanwhile (the second,
		// every block of which was written): it is deleted.
		if err := l.Reclaim(2); err != nil {
			t.Fatal(err)
		}
		contentlog.WaitPrepared(l)
		if st := l.Stats(); st.Recycled != before.Recycled || st.SpareBytes != 0 {
			t.Fatalf("stats %+v: a segment reclaimed between large batches was recycled", st)
		}
		// Small batches a while after: the spare is prepared again.
		now.advance(2 * time.Second)
		fill(l, now, 64<<10, 2<<20, 100*time.Millisecond)
		if st := l.Stats(); st.SpareBytes != size {
			t.Fatalf("stats %+v: small batches long after the large ones, want a spare prepared", st)
		}
	})
}
