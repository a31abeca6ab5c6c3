package contentlog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/internal/failpoint"
)

// A segment whose blocks were reserved with fallocate but never written
// costs more at every sync: the first write into each block turns it from
// reserved to written, a change of the file's metadata that fdatasync must
// journal (on ext4 about 0.19 ms a sync where overwriting written blocks
// costs 0.10). So the log keeps one spare segment ahead whose every block
// is written: a reclaimed segment, renamed and its never-written blocks
// filled with zeros, or else a new file filled with zeros. Both are done in
// the background and synced before the spare is renamed into place, so no
// append waits for them unless appends outrun them, and then the next
// segment is reserved with fallocate instead (Stats.Unprepared counts
// those, and reserve logs it).
//
// The old records of a recycled segment stay in it until appends overwrite
// them. None of them is ever taken for a record of the new segment: each
// header's checksum covers the id and offset of the segment it was written
// in, so the end of the new segment's records is still the first position
// without a valid header.
//
// A new spare is prepared only once the segment being appended to is half
// full, so that a segment reclaimed meanwhile (sessions finish all the
// time) becomes the spare instead, at the cost of its never-written blocks
// alone; from a segment reserved with fallocate, whose syncs cost more, it
// is prepared once that segment holds prepareAfter bytes (a MiB, or an
// eighth of a smaller segment). Either
// way a log that stays small (a test's, a daemon that writes little) never
// writes a segment's worth of zeros.
//
// The writer's rate changes both (see pace): a preparation starts earlier
// when the segment, at the rate it is being filled, would be full before a
// preparation begun at half could end; and none starts, nor is a
// reclaimed segment recycled, within a second of a large batch (a file
// streamed in chunks of a MiB), where the few syncs of the next segment
// would save less than its zeros cost the disk meanwhile: that segment is
// reserved with fallocate.

const (
	spareName   = "spare"     // a prepared spare, ready to be the next segment
	prepareName = "spare.tmp" // a spare being prepared; removed by Open

	prepareChunk    = 256 << 10 // zeros written by one write
	prepareSync     = 1 << 20   // zeros written between two syncs
	maxPrepareAfter = 1 << 20
)

// Prepares reports whether a log in dir keeps a prepared spare segment: not
// where the file system writes every overwrite elsewhere (btrfs, ZFS), nor
// outside Linux (see prepares).
func Prepares(dir string) bool { return prepares(dir) }

// errStopped ends a preparation that Close cut short.
var errStopped = errors.New("content log: closed while preparing a segment")

// spareFile is a prepared spare segment.
type spareFile struct {
	f    segFile
	size int64
}

func (l *Log) sparePath() string   { return filepath.Join(l.dir, spareName) }
func (l *Log) preparePath() string { return filepath.Join(l.dir, prepareName) }

// openSpare takes up the spare a previous run prepared, and removes one
// whose preparation a stop cut short: a spare has its name only once its
// zeros are synced.
func (l *Log) openSpare() error {
	if err := os.Remove(l.preparePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open content log: %w", err)
	}
	f, err := l.open(l.sparePath(), os.O_RDWR)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open content log: %w", err)
	}
	var size int64
	if fi, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		if st, err := fi.Stat(); err == nil {
			size = st.Size()
		}
	}
	// One smaller than a segment (a run with smaller segments left it)
	// would never be taken, and would keep a spare that fits from being
	// prepared.
	if size < l.segSize {
		f.Close()
		os.Remove(l.sparePath())
		return nil
	}
	l.spare = &spareFile{f: f, size: size}
	return nil
}

// prepareSoon starts preparing a new spare in the background once the
// segment being appended to is full enough (see above), unless a spare is
// ready or being prepared; once per segment, so a preparation that failed
// (a full disk) is tried again only with the next one. Only the leader
// calls it.
func (l *Log) prepareSoon() {
	if l.active == nil || l.prepFor == l.active.id {
		return
	}
	p := &l.pace
	now := p.clock()
	batch := l.tail - p.last
	if p.seg != l.active.id {
		// Seen first after its first batch, which has no start time:
		// the rate is counted from its end.
		p.seg, p.since, p.from, batch = l.active.id, now, l.tail, l.tail
	}
	p.last = l.tail
	if batch >= largeBatch {
		p.large.Store(now.UnixNano())
	}
	if p.holding(now) {
		// Zeros would cost more than they save where batches are this
		// large, and they would be written while the next large
		// batches come, or between two of their streams: the next
		// segment is reserved with fallocate, or is a reclaimed one,
		// and the log does not say it was outrun. Once large batches
		// stop, smaller ones get a spare prepared as before.
		return
	}
	after := l.prepareAfter
	if l.active.prepared {
		after = l.active.size / 2
	}
	switch {
	case l.tail >= after:
	case p.fillsBefore(now, l.tail, l.active.size, l.segSize):
	default:
		return
	}
	l.prepFor = l.active.id
	if l.claimPreparation() {
		go l.prepare(nil)
	}
}

// pace is what prepareSoon knows of the writer's rate: the active
// segment's appends since it was first seen, and how fast a new spare was
// last prepared. The leader alone reads and writes it, but for prepNanos,
// which prepare writes.
type pace struct {
	// seg is the segment the figures are of, since when it was first
	// seen, from its tail then, and last its tail at the last batch.
	seg        uint64
	since      time.Time
	from, last int64
	// large is when the last batch of largeBatch or more ended, in
	// Unix nanoseconds (0: never); read by recycle too.
	large atomic.Int64
	// prepNanos is the time the last preparation of a new spare took per
	// MiB, 0 before one ends.
	prepNanos atomic.Int64
	// now is the clock, replaced by tests (nil: time.Now).
	now func() time.Time
}

const (
	// paceSample is how much a segment takes before its rate is
	// trusted.
	paceSample = 1 << 20
	// largeBatch is the batch from which zeros do not pay: in batches
	// smaller than it, the syncs saved on a segment (a tenth of a
	// millisecond each) outweigh writing it whole once more. A margin of
	// about ten times keeps preparing where in doubt, and keeps one
	// session's pipelined chunks of 64 KiB (eight in flight) under it:
	// batches this large come from chunks of a MiB, or from many
	// sessions at once.
	largeBatch = 1 << 20
	// largeHold is how long after a large batch no preparation starts.
	largeHold = time.Second
	// assumedPrepNanos is the time a preparation is taken to need per
	// MiB before one was measured (200 MB/s).
	assumedPrepNanos = int64(time.Second) / 200
)

// holding reports whether a large batch ended less than largeHold before
// now.
func (p *pace) holding(now time.Time) bool {
	t := p.large.Load()
	return t != 0 && now.Sub(time.Unix(0, t)) < largeHold
}

func (p *pace) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// fillsBefore reports whether the active segment, of size bytes and
// holding tail, fills at its rate so far before twice the time a spare of
// segSize bytes takes to prepare: a preparation must start now to be
// ready.
func (p *pace) fillsBefore(now time.Time, tail, size, segSize int64) bool {
	appended, took := tail-p.from, now.Sub(p.since)
	if appended < paceSample || took <= 0 {
		return false
	}
	perMiB := p.prepNanos.Load()
	if perMiB == 0 {
		perMiB = assumedPrepNanos
	}
	prep := time.Duration(perMiB * (segSize >> 20))
	full := time.Duration(float64(took) * float64(size-tail) / float64(appended))
	return full <= 2*prep
}

// claimPreparation reports whether the caller may start a preparation: no
// spare is ready, none is being prepared and the log is not closing. Its
// caller must then run prepare.
func (l *Log) claimPreparation() bool {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	if l.noSpares || l.spare != nil || l.preparing || l.stopping {
		return false
	}
	l.preparing = true
	l.prepDone.Add(1)
	return true
}

// recycle makes reclaimed segment s, whose file is still open, the spare
// being prepared, if there is room for one and most of it was written: it
// reports whether it renamed the file to preparePath, in which case its
// caller syncs the directory and runs prepare(s.f). A segment mostly
// unwritten (reserved with fallocate and rotated early, or left after a
// failed write) would cost as many zeros as a new file, and it would cost
// them now, in a store that may never need another segment.
//
// While large batches come (see pace), the segment is not recycled: its
// zeros would be written while they stream, for a next segment that takes
// few syncs.
func (l *Log) recycle(s *segment) bool {
	if l.pace.holding(l.pace.clock()) {
		return false
	}
	if s.size != l.segSize || unwritten(s.f, s.size) > s.size/2 || !l.claimPreparation() {
		return false
	}
	if err := os.Rename(l.segPath(s.id), l.preparePath()); err != nil {
		l.spareMu.Lock()
		l.preparing = false
		l.prepEnded.Broadcast()
		l.spareMu.Unlock()
		l.prepDone.Done()
		return false
	}
	l.recycled.Add(1)
	return true
}

// prepare makes f (a recycled segment at preparePath), or a new file there
// when f is nil, a spare: every block of its segSize bytes written, synced,
// and then renamed to sparePath. The caller has claimed the preparation.
func (l *Log) prepare(f segFile) {
	defer l.prepDone.Done()
	tmp := l.preparePath()
	var err error
	fresh := f == nil
	if fresh {
		f, err = l.open(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	}
	start := l.pace.clock()
	if err == nil {
		err = l.fill(f, l.segSize)
	}
	if took := l.pace.clock().Sub(start); err == nil && fresh && l.segSize >= 1<<20 && took > 0 {
		l.pace.prepNanos.Store(int64(took) / (l.segSize >> 20))
	}
	if err == nil {
		failpoint.Hit("contentlog.spare")
		err = os.Rename(tmp, l.sparePath())
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		// While the preparation is still claimed: once it is not, a
		// recycled segment or a new file may take the name.
		os.Remove(tmp)
		if !errors.Is(err, errStopped) {
			slog.Warn("content log: preparing the next segment failed; it will be reserved with fallocate instead", "err", err)
		}
	}
	l.spareMu.Lock()
	l.preparing = false
	if err == nil {
		if l.stopping {
			f.Close() // the spare stays, for the next Open
		} else {
			l.spare = &spareFile{f: f, size: l.segSize}
		}
	}
	l.prepEnded.Broadcast()
	l.spareMu.Unlock()
}

// waitPrepared waits for the preparation running, if any, to end.
func (l *Log) waitPrepared() {
	l.spareMu.Lock()
	for l.preparing {
		l.prepEnded.Wait()
	}
	l.spareMu.Unlock()
}

// unwritten returns how many of the first size bytes of f hold no written
// data.
func unwritten(f segFile, size int64) int64 {
	var n int64
	for from := int64(0); ; {
		start, end, ok := f.Holes(from, size)
		if !ok {
			return n
		}
		n += end - start
		from = end
	}
}

// fill writes zeros over every part of the first size bytes of f that holds
// no written data, and syncs it. It syncs every prepareSync bytes on the way:
// an append's sync waits for whatever the disk was given before it, and 64
// MiB of zeros handed over at once held appends for up to tens of
// milliseconds where a MiB at a time held them for a few.
func (l *Log) fill(f segFile, size int64) error {
	var zeros []byte
	var unsynced int64
	hit := false
	for from := int64(0); ; {
		start, end, ok := f.Holes(from, size)
		if !ok {
			break
		}
		if zeros == nil {
			zeros = make([]byte, prepareChunk)
		}
		for off := start; off < end; {
			if l.stop.Load() {
				return errStopped
			}
			if l.fault != nil {
				if err := l.fault("prepare"); err != nil {
					return fmt.Errorf("content log: prepare a segment: %w", err)
				}
			}
			n := min(int64(len(zeros)), end-off)
			if _, err := f.WriteAt(zeros[:n], off); err != nil {
				return fmt.Errorf("content log: prepare a segment: %w", err)
			}
			off += n
			if !hit {
				failpoint.Hit("contentlog.prepare")
				hit = true
			}
			if unsynced += n; unsynced >= prepareSync {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("content log: prepare a segment: %w", err)
				}
				unsynced = 0
			}
		}
		from = end
	}
	if !hit {
		failpoint.Hit("contentlog.prepare")
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("content log: prepare a segment: %w", err)
	}
	return nil
}

// takeSpare makes the spare segment id, if one of at least size bytes is
// ready: renamed and the directory synced. It returns nil and whether a
// preparation is running when there is none to take.
func (l *Log) takeSpare(id uint64, size int64) (*segment, bool, error) {
	l.spareMu.Lock()
	sp := l.spare
	if sp == nil || sp.size < size {
		preparing := l.preparing
		l.spareMu.Unlock()
		return nil, preparing, nil
	}
	l.spare = nil
	l.spareMu.Unlock()
	path := l.segPath(id)
	if err := os.Rename(l.sparePath(), path); err != nil {
		sp.f.Close()
		os.Remove(l.sparePath())
		return nil, false, nil
	}
	if err := syncDir(l.dir); err != nil {
		sp.f.Close()
		os.Remove(path)
		return nil, false, fmt.Errorf("content log: new segment: %w", err)
	}
	l.prepared.Add(1)
	return &segment{id: id, f: sp.f, size: sp.size, prepared: true}, false, nil
}

// spareFits reports whether a spare of at least size bytes is ready.
func (l *Log) spareFits(size int64) bool {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	return l.spare != nil && l.spare.size >= size
}

// spareBytes is the size of the spare, ready or being prepared.
func (l *Log) spareBytes() int64 {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	switch {
	case l.spare != nil:
		return l.spare.size
	case l.preparing:
		return l.segSize
	}
	return 0
}

// stopPreparing waits for a preparation to end, cutting it short, and
// closes the spare's file (which stays, ready for the next Open).
func (l *Log) stopPreparing() {
	l.spareMu.Lock()
	l.stopping = true
	l.spareMu.Unlock()
	l.stop.Store(true)
	l.prepDone.Wait()
	l.spareMu.Lock()
	if l.spare != nil {
		l.spare.f.Close()
		l.spare = nil
	}
	l.spareMu.Unlock()
}
