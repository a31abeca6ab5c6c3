// Package contentlog is an append-only log of opaque records in numbered,
// preallocated segment files, for bytes too many and too short-lived to
// rewrite in a B+tree: oriond's session content, and whatever else wants to
// be written once, read a few times and dropped in bulk.
//
// An appended record is addressed by a Ref (segment, offset, length), which
// the caller keeps in its own index. Records are never changed in place; a
// caller that no longer needs any record of a segment reclaims it whole,
// after copying the few it still needs elsewhere (compaction is the
// caller's, since only its index knows which records are live).
//
// Writes are group-committed: every record queued while one batch is being
// written and synced goes into the next batch, which costs one fdatasync
// whatever its size, and one pwrite, or one per large part written from where
// it is (a chunk of a MiB is never copied into the batch). Append returns once its records are durable;
// Enqueue and Wait split it in two, for a caller that orders its records under
// a lock of its own and waits without it. A batch holding a large chunk (of
// a file streamed whole) lets the next batch be written while it is synced: the
// copy into the page cache then overlaps the disk's write rather than
// waiting for it, while the syncs stay one at a time, in log order.
// Segments are preallocated so that fdatasync has no file size to update,
// and prepared ahead so that it has no block to convert either (spare.go).
//
// Each record on disk is a 16-byte header and its payload:
//
//	magic   uint32  recordMagic
//	length  uint32  payload bytes
//	crc     uint32  CRC-32C of the payload
//	hcrc    uint32  CRC-32C of segment id, offset, magic, length and crc
//
// The header's checksum binds a record to the place it was written, so a
// stale record left in a region being overwritten, the old records of a
// recycled segment, or bytes copied from elsewhere, are never taken for a
// record there. Past its last record a segment reads as zeros or as the old
// records of the segment it was recycled from, which no header matches: the
// end of a segment is the first position without a valid header. A record
// whose header is valid but whose payload is not is damage: at the end of
// the log it is a torn write that was never acknowledged (Open drops it);
// anywhere else it is reported as ErrDamaged when read or scanned, never
// returned as data.
package contentlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/orion-agent/orion/internal/failpoint"
)

// ErrDamaged reports a record whose bytes do not match its checksums. Errors
// wrapping it name the segment and offset.
var ErrDamaged = errors.New("content log: record damaged")

// ErrClosed reports a call on a Log after Close.
var ErrClosed = errors.New("content log: closed")

// A WriteError reports a batch whose write or sync failed. None of its
// records is acknowledged, and segment Seg takes no more appends; some of
// the records may still be found there after a crash (the bytes reached
// the disk, or part of them did), so a caller that replays the log must
// not take records of Seg past its last acknowledged one for its own.
type WriteError struct {
	Seg uint64
	Err error
}

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

const (
	headerSize  = 16
	recordMagic = 0x4f524c47 // "ORLG"

	// DefaultSegmentSize is the size segments are preallocated to. A record
	// larger than a segment gets a segment of its own, sized to fit.
	DefaultSegmentSize = 64 << 20

	// MaxRecord bounds one record's payload.
	MaxRecord = 1 << 30

	segSuffix = ".seg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Ref addresses one record: its segment, the offset of its header in that
// segment and the length of its payload.
type Ref struct {
	Seg uint64
	Off int64
	Len uint32
}

// End is the offset just past the record in its segment.
func (r Ref) End() int64 { return r.Off + headerSize + int64(r.Len) }

// Pos is the record's position in the log.
func (r Ref) Pos() Pos { return Pos{Seg: r.Seg, Off: r.Off} }

// Size is the number of bytes the record takes in its segment.
func (r Ref) Size() int64 { return headerSize + int64(r.Len) }

// Pos is a position in the log: a segment and an offset in it. Positions
// order as the log was written.
type Pos struct {
	Seg uint64
	Off int64
}

// Less reports whether p comes before q in the log.
func (p Pos) Less(q Pos) bool { return p.Seg < q.Seg || (p.Seg == q.Seg && p.Off < q.Off) }

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// SegmentSize is the size new segments are preallocated to. 0 means
	// DefaultSegmentSize.
	SegmentSize int64

	// Fault, for tests only, is asked before each write ("write"), sync
	// ("sync") and allocation ("allocate") of a segment file, and before
	// each write of zeros into a spare segment ("prepare"), and its
	// error, if any, is returned instead of doing it (a failed write
	// writes half of its bytes first, as a real one may).
	Fault func(op string) error

	// file opens segment files; tests replace it to inject failures.
	file func(path string, flag int) (segFile, error)
}

// segFile is what the log needs of a segment file.
type segFile interface {
	io.ReaderAt
	io.WriterAt
	Sync() error // fdatasync where the system has it
	Allocate(size int64) error
	// Holes returns the next range of [from, size) with no data written
	// in it, if any (see osFile.Holes).
	Holes(from, size int64) (start, end int64, ok bool)
	Close() error
}

// Stats are the log's counters since Open.
type Stats struct {
	Records uint64 // records appended
	Batches uint64 // group commits: one pwrite each
	Syncs   uint64 // fdatasyncs of segment data
	Bytes   int64  // bytes the segments' records take on disk, all segments

	// Prepared counts the segments begun on a prepared spare (every
	// block written before), Unprepared those reserved with fallocate
	// because no spare was ready, and Recycled the reclaimed segments
	// kept as a spare instead of deleted.
	Prepared, Unprepared, Recycled uint64
	// SpareBytes is the size of the spare segment, ready or being
	// prepared: disk the log holds beyond its segments.
	SpareBytes int64
}

// Log is an open content log. Its methods are safe for concurrent use.
type Log struct {
	dir     string
	segSize int64
	open    func(path string, flag int) (segFile, error)
	fault   func(op string) error

	// mu guards the queue, the leader flag (see Append) and the batch
	// tickets.
	mu      sync.Mutex
	idle    *sync.Cond // signalled when no one leads and no batch is being synced
	queue   []*Queued
	leading bool
	closed  bool
	// Batches are numbered as they are written (written, the next
	// ticket) and finished in that order (finished, the next to finish):
	// a batch with a large chunk hands the lead on before its sync (commit), so the
	// next one may be written meanwhile, but syncs, the durable calls
	// and the replies still follow the log's order. turn is signalled
	// when finished moves.
	written, finished uint64
	turn              *sync.Cond
	// covered is the ticket up to which (not included) every batch was
	// written into segment coveredSeg before its last sync started: a
	// batch written while the one before it waited for its turn needs
	// no sync of its own. Set, and read, by the batch whose turn it is.
	covered    uint64
	coveredSeg *segment
	// broken is the segment whose sync failed (0: none): a batch written
	// into it after the failed one fails too, and the next batch starts a
	// new segment.
	broken atomic.Uint64
	// spareQueue is the array of the last batch, emptied, for the queue
	// to go on in when the next leader takes it: the two arrays take
	// turns rather than a new one being grown for every batch.
	spareQueue []*Queued

	// segMu guards segs. The leader holds it only to rotate; readers hold
	// it to find a segment's file.
	segMu sync.RWMutex
	segs  map[uint64]*segment
	// active and tail are touched only by the leader (and Open/Close).
	active *segment
	tail   int64

	// spareMu guards the spare segment and its preparation (spare.go).
	spareMu   sync.Mutex
	spare     *spareFile // ready to be the next segment
	preparing bool       // a preparation runs (or is about to)
	prepEnded *sync.Cond // on spareMu: signalled when preparing turns false
	stopping  bool       // Close: no new preparation
	prepDone  sync.WaitGroup
	stop      atomic.Bool // cuts a preparation short
	// prepFor is the active segment a preparation was last asked for,
	// prepareAfter how full it must be first (leader only); noSpares
	// turns preparing and recycling off (see prepares).
	prepFor      uint64
	prepareAfter int64
	noSpares     bool
	// pace is the active segment's appends and the preparations' speed,
	// by which a preparation starts (spare.go).
	pace pace

	bytes      atomic.Int64
	records    atomic.Uint64
	batches    atomic.Uint64
	syncs      atomic.Uint64
	prepared   atomic.Uint64
	unprepared atomic.Uint64
	recycled   atomic.Uint64

	// The leader's, reused from batch to batch: the buffer records are
	// gathered in, the large parts written from where they are, and the
	// list of writes they make.
	buf    []byte
	pieces []piece
	writes [][]byte
}

type segment struct {
	id   uint64
	f    segFile
	size int64 // preallocated size
	end  atomic.Int64
	// prepared: every block was written before the segment's first
	// record (the leader's to read).
	prepared bool
}

// Queued is records that Enqueue put in the log's queue, waiting for their
// batch: Wait returns once they are durable, or failed.
type Queued struct {
	log     *Log
	recs    [][][]byte
	durable Durable
	refs    []Ref
	// one holds refs of a Queued of one record, the usual one: its
	// refs are not an allocation of their own.
	one [1]Ref
	err error
	// after, until the batch takes it, is the Queued whose records must
	// be durable for these to be written (Enqueue).
	after *Queued
	// done receives true when this Queued is to lead the next batch, false
	// when its records are durable (or failed). Empty again when Wait
	// returns, it goes back to doneChans.
	done chan bool
}

// doneChans keeps the done channels of finished Appends for the next
// ones: a channel each was an allocation per append.
var doneChans = sync.Pool{New: func() any { return make(chan bool, 1) }}

// Open opens the log in dir, creating dir (0700) if needed, and finds the end
// of its last segment: the first position without a valid record, dropping a
// torn record there. Appends go after it. The other segments are not read:
// their size counts as their records' (Stats, Segments).
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.file == nil {
		opts.file = openOSFile
		if fault := opts.Fault; fault != nil {
			opts.file = func(path string, flag int) (segFile, error) {
				f, err := openOSFile(path, flag)
				if err != nil {
					return nil, err
				}
				return faultyFile{f.(osFile), fault}, nil
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open content log: %w", err)
	}
	l := &Log{dir: dir, segSize: opts.SegmentSize, open: opts.file, fault: opts.Fault, segs: map[uint64]*segment{},
		prepareAfter: min(maxPrepareAfter, opts.SegmentSize/8), noSpares: !prepares(dir)}
	l.idle = sync.NewCond(&l.mu)
	l.turn = sync.NewCond(&l.mu)
	l.prepEnded = sync.NewCond(&l.spareMu)
	ids, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if err := l.openSpare(); err != nil {
		return nil, err
	}
	for i, id := range ids {
		f, err := l.open(l.segPath(id), os.O_RDWR)
		if err != nil {
			l.closeFiles()
			return nil, fmt.Errorf("open content log: %w", err)
		}
		s := &segment{id: id, f: f}
		if fi, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
			if st, err := fi.Stat(); err == nil {
				s.size = st.Size()
			}
		}
		l.segs[id] = s
		// Only the last segment can end in a torn write, and only its
		// end is where appends go: the others count whole, which
		// spares a read of the whole log at every start.
		end := s.size
		if i == len(ids)-1 {
			if end, err = l.scanEnd(s); err != nil {
				l.closeFiles()
				return nil, err
			}
			l.active, l.tail = s, end
			_, _, holes := f.Holes(end, s.size)
			s.prepared = !holes
			stale, err := l.recordPastEnd(s, end)
			if err != nil {
				l.closeFiles()
				return nil, err
			}
			if stale {
				// Appends go to a new segment (see recordPastEnd).
				slog.Warn("content log: a record was found past the end of the last segment, written before a crash but never acknowledged; appends continue in a new segment",
					"segment", id, "end", end)
				l.active = nil
			}
		}
		s.end.Store(end)
		l.bytes.Add(end)
	}
	return l, nil
}

// listSegments returns the ids of the segment files in dir, ascending.
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open content log: %w", err)
	}
	var ids []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segSuffix)
		if !ok || len(name) != 16 {
			continue
		}
		id, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func (l *Log) segPath(id uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%016x%s", id, segSuffix))
}

// scanEnd returns the end of the valid records of s: the offset of the first
// invalid header, or of a damaged record not followed by a valid one (a
// torn write).
func (l *Log) scanEnd(s *segment) (int64, error) {
	var end int64
	err := l.scanSegment(s, 0, func(ref Ref, _ []byte, err error) error {
		end = ref.End()
		return nil
	})
	return end, err
}

// recordPastEnd reports whether s holds a valid record header anywhere
// after end, the end of its records. After a power loss a record can
// survive the loss of the one before it (the disk kept one page and not
// another): the log ends before it, and it was never acknowledged. Were
// appends to go on at end, a record ending exactly where it starts (the
// lost one sent again, as long as it was) would make it part of the log
// at the next start, with bytes the client never had acknowledged. A
// header binds a record to its segment and offset, so old records of a
// recycled segment never match; anything that does was written here.
func (l *Log) recordPastEnd(s *segment, end int64) (bool, error) {
	const window = 1 << 20
	buf := make([]byte, window+headerSize)
	magic := binary.BigEndian.AppendUint32(nil, recordMagic)
	var hdr [headerSize]byte
	for from := end + 1; from+headerSize <= s.size; from += window {
		n, err := s.f.ReadAt(buf[:min(int64(len(buf)), s.size-from)], from)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("content log: read segment %d at %d: %w", s.id, from, err)
		}
		// A window's last headerSize-1 bytes start the next one's read.
		for at, b := 0, buf[:n]; ; {
			i := bytes.Index(b[at:], magic)
			if i < 0 || at+i+headerSize > n || at+i >= window {
				break
			}
			at += i
			if _, ok, err := readHeader(s, from+int64(at), hdr[:]); err != nil || ok {
				return ok, err
			}
			at++
		}
	}
	return false, nil
}

// scanSegment calls fn for each record of s from off on, with ErrDamaged for
// a record whose payload does not match its checksum when a valid record
// follows it. It stops at the end of the segment's records; a damaged record
// with nothing valid after it is that end.
func (l *Log) scanSegment(s *segment, off int64, fn func(Ref, []byte, error) error) error {
	var hdr [headerSize]byte
	var payload []byte
	for {
		ref, ok, err := readHeader(s, off, hdr[:])
		if err != nil || !ok {
			return err
		}
		payload = slices.Grow(payload[:0], int(ref.Len))[:ref.Len]
		if _, err := s.f.ReadAt(payload, off+headerSize); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // header of a record cut short by the file's end
			}
			return fmt.Errorf("content log: read segment %d at %d: %w", s.id, off, err)
		}
		var recErr error
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(hdr[8:]) {
			// Damaged: the tail of the log if nothing valid follows.
			_, next, err := readHeader(s, ref.End(), hdr[:])
			if err != nil {
				return err
			}
			if !next {
				return nil
			}
			recErr = fmt.Errorf("segment %d offset %d: %w", s.id, off, ErrDamaged)
			payload = nil
		}
		if err := fn(ref, payload, recErr); err != nil {
			return err
		}
		off = ref.End()
	}
}

// readHeader reads the header at off in s into hdr and reports whether it is
// a valid record header there.
func readHeader(s *segment, off int64, hdr []byte) (Ref, bool, error) {
	n, err := s.f.ReadAt(hdr, off)
	if n < headerSize {
		if err == nil || errors.Is(err, io.EOF) {
			return Ref{}, false, nil
		}
		return Ref{}, false, fmt.Errorf("content log: read segment %d at %d: %w", s.id, off, err)
	}
	if binary.BigEndian.Uint32(hdr) != recordMagic {
		return Ref{}, false, nil
	}
	length := binary.BigEndian.Uint32(hdr[4:])
	if length > MaxRecord || binary.BigEndian.Uint32(hdr[12:]) != headerCRC(s.id, off, hdr) {
		return Ref{}, false, nil
	}
	return Ref{Seg: s.id, Off: off, Len: length}, true, nil
}

// headerCRC is the checksum of a header's first 12 bytes and its place.
func headerCRC(seg uint64, off int64, hdr []byte) uint32 {
	return crc32.Update(placeCRC(seg, off), castagnoli, hdr[:12])
}

// placeCRC is the CRC-32C of a record's place, its segment id and offset
// as 16 big-endian bytes, computed byte by byte: the 16 bytes in an array
// handed to crc32 went to the heap with every record written and read.
func placeCRC(seg uint64, off int64) uint32 {
	crc := ^uint32(0)
	for _, v := range [2]uint64{seg, uint64(off)} {
		for shift := 56; shift >= 0; shift -= 8 {
			crc = castagnoli[byte(crc)^byte(v>>shift)] ^ crc>>8
		}
	}
	return ^crc
}

// Append writes recs as consecutive records and returns their refs once they
// are durable. Concurrent calls share a write and a sync. If durable is not
// nil it is called with the refs after the sync and before any later batch
// is synced or told durable (a later batch may already be written, beside
// this one's sync): callers that index records see them in log order. It must be
// quick and must not call the Log. On an error none of recs is acknowledged;
// they may or may not be found in the log after a crash.
func (l *Log) Append(recs [][]byte, durable func([]Ref)) ([]Ref, error) {
	parts := make([][][]byte, len(recs))
	for i, r := range recs {
		parts[i] = [][]byte{r}
	}
	return l.AppendParts(parts, durable)
}

// AppendParts is Append of records given in parts: each record's payload is
// the concatenation of its parts. Large parts are written from where they
// are, never copied into the batch (a chunk of a MiB is the whole point of
// the write); small ones are gathered, so a batch of many small records is
// still one write.
func (l *Log) AppendParts(recs [][][]byte, durable func([]Ref)) ([]Ref, error) {
	q, err := l.Enqueue(recs, durable, nil)
	if err != nil {
		return nil, err
	}
	return q.Wait()
}

// ErrAfterFailed reports records that were not written because the ones
// they were queued after (Enqueue's after) failed.
var ErrAfterFailed = errors.New("content log: not written, as the records queued before them failed")

// Enqueue is AppendParts in two steps: it puts recs in the queue of the
// next batch and returns, and Wait on what it returns waits for them to be
// durable and returns what AppendParts would. Records enqueued later are
// written after these, so a caller that enqueues in its own order (under
// its own lock) and waits without it keeps its records in order while its
// next ones join the same batch. The caller must call Wait, once, and soon:
// the first Queued of a batch leads it, and no batch is written until its
// leader waits.
//
// If after is not nil, recs are written only if after's records were: when
// after failed, recs fail too, with ErrAfterFailed, unwritten, so that a
// record that depends on the ones before it (the next chunk of a stream)
// never lands in the log without them.
func (l *Log) Enqueue(recs [][][]byte, durable func([]Ref), after *Queued) (*Queued, error) {
	q := new(Queued)
	var d Durable
	if durable != nil {
		d = durableFunc(durable)
	}
	if err := l.EnqueueInto(q, recs, d, after); err != nil {
		return nil, err
	}
	return q, nil
}

// Durable is told the refs of records once they are durable, as Enqueue's
// durable func is (EnqueueInto).
type Durable interface{ Durable(refs []Ref) }

// durableFunc is a func as a Durable.
type durableFunc func([]Ref)

func (f durableFunc) Durable(refs []Ref) { f(refs) }

// EnqueueInto is Enqueue into q, a zero Queued of the caller's (a field of
// what it holds for the records' life: an append's, for instance), with
// durable (nil: none) told of the refs: no allocation of the log's own
// beyond the queue's. q must not be used again for another Enqueue.
func (l *Log) EnqueueInto(q *Queued, recs [][][]byte, durable Durable, after *Queued) error {
	for _, r := range recs {
		if n := partsLen(r); n > MaxRecord {
			return fmt.Errorf("content log: record of %d bytes, limit %d", n, MaxRecord)
		}
	}
	*q = Queued{log: l, recs: recs, durable: durable, after: after, done: doneChans.Get().(chan bool)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		// No Wait will give the channel back.
		doneChans.Put(q.done)
		q.done = nil
		return ErrClosed
	}
	l.queue = append(l.queue, q)
	if !l.leading {
		// No batch is being written: q leads the next one once it
		// waits, with whatever queues up meanwhile.
		l.leading = true
		q.done <- true
	}
	return nil
}

// Wait waits until q's records are durable and returns their refs, or the
// error that failed them, as AppendParts does. Only one goroutine may call
// it, once.
func (q *Queued) Wait() ([]Ref, error) {
	lead := <-q.done
	// Each send on done is received by now: nothing is left in it or
	// sent to it after.
	doneChans.Put(q.done)
	q.done = nil
	if !lead {
		return q.refs, q.err
	}
	l := q.log
	// Lead: write what has queued up, in one batch. q is in it. The
	// queue goes on in the array of the batch before, which its leader
	// gave back.
	l.mu.Lock()
	batch := l.queue
	l.queue = l.spareQueue
	l.spareQueue = nil
	l.mu.Unlock()
	passed := l.commit(batch)
	clear(batch)
	l.mu.Lock()
	if l.spareQueue == nil {
		l.spareQueue = batch[:0]
	}
	if !passed {
		l.passLeadLocked()
	}
	l.mu.Unlock()
	return q.refs, q.err
}

// passLeadLocked hands the lead to the first writer that queued
// meanwhile, so that the one leading can return, or marks the log idle.
func (l *Log) passLeadLocked() {
	if len(l.queue) > 0 {
		l.queue[0].done <- true
	} else {
		l.leading = false
		l.idle.Broadcast()
	}
}

// quietLocked reports whether no one leads and every batch written is
// finished: nothing is being written or synced.
func (l *Log) quietLocked() bool { return !l.leading && l.finished == l.written }

// drain waits until every batch written is finished. The leader calls it
// before it starts a new segment, so that no sync of the segment before is
// still running: a batch of the old segment that fails must fail every
// batch after it, which it can only do in its own segment (broken), and
// the old segment's records must be counted as live (its durable calls)
// before it can be reclaimed.
func (l *Log) drain() {
	l.mu.Lock()
	for l.finished != l.written {
		l.turn.Wait()
	}
	l.mu.Unlock()
}

// pipelinePart is the size of a record's part (a chunk) from which its
// batch hands the lead on before it is synced: the next batch, most likely
// the stream's next chunk, is then copied into the page cache while the
// disk writes this one. Other batches, however large (many sessions'
// small appends), keep the lead until they are durable, so that the
// appends that come meanwhile gather into one write (many small writes
// would each cost a system call), as they did before.
const pipelinePart = 256 << 10

// refuse fails, unwritten, each Queued of batch whose after failed, and
// returns the bytes the others take, or -1 when none is left to write: it
// then finishes them all but the leader's own. after was finished by an
// earlier batch, or is earlier in this one: either its error is set, or it
// is written with p. Or after's batch is written but still being synced:
// then it is in the same segment as p (a new segment waits for every sync,
// drain), and should its sync fail, every batch after it there fails too
// (broken).
func (l *Log) refuse(batch []*Queued) int64 {
	var need int64
	refused := 0
	for _, p := range batch {
		if p.err == nil && p.after != nil {
			// after's batch may be finishing now (l.mu guards the
			// error it sets).
			l.mu.Lock()
			err := p.after.err
			l.mu.Unlock()
			if err != nil {
				p.err = fmt.Errorf("%w: %v", ErrAfterFailed, err)
			}
		}
		if p.err != nil {
			refused++
			continue
		}
		for _, r := range p.recs {
			need += headerSize + int64(partsLen(r))
		}
	}
	if refused < len(batch) {
		return need
	}
	// Nothing to write or sync.
	for _, p := range batch {
		p.after = nil
	}
	for _, p := range batch[1:] {
		p.done <- false
	}
	return -1
}

// commit writes batch with one pwrite and one fdatasync and finishes every
// Queued in it but the leader's own, which it fills in. A Queued whose
// after failed is finished unwritten. It reports whether it passed the lead
// on itself: a batch with a large chunk does so once it is written, before
// its sync (pipelinePart), and then waits for its turn to sync, after the
// batches written before it.
func (l *Log) commit(batch []*Queued) (passed bool) {
	need := l.refuse(batch)
	if need < 0 {
		return false
	}
	drained, err := l.reserve(need)
	if err != nil {
		l.active = nil
	}
	if drained {
		// The batches before were finished meanwhile, and one of them
		// may have failed.
		if need = l.refuse(batch); need < 0 {
			return false
		}
	}
	for _, p := range batch {
		p.after = nil // the chain of a stream is not kept alive
	}
	var (
		start int64
		seg   *segment
		large bool // a part of pipelinePart or more
	)
	if err == nil {
		start, seg = l.tail, l.active
		// The batch is written as a list of pieces: runs gathered in buf,
		// and large parts as they are. Each gathered run ends where
		// buf stood when the next large part came.
		buf := l.buf[:0]
		pieces := l.pieces[:0]
		off := start
		for _, p := range batch {
			if p.err != nil {
				continue // refused
			}
			if len(p.recs) == 1 {
				p.refs = p.one[:]
			} else {
				p.refs = make([]Ref, len(p.recs))
			}
			for i, r := range p.recs {
				n := partsLen(r)
				p.refs[i] = Ref{Seg: seg.id, Off: off, Len: uint32(n)}
				buf = appendHeader(buf, seg.id, off, r)
				for _, part := range r {
					if len(part) < directPart {
						buf = append(buf, part...)
						continue
					}
					pieces = append(pieces, piece{gathered: len(buf), part: part})
					large = large || len(part) >= pipelinePart
				}
				off += headerSize + int64(n)
			}
		}
		l.buf = buf
		l.writes = writes(l.writes[:0], buf, pieces)
		if err = l.write(seg, l.writes, start); err != nil {
			err = &WriteError{Seg: seg.id, Err: err}
			// Nothing is written after bytes of unknown state: the
			// next batch starts a new segment.
			l.active = nil
		} else {
			l.tail = start + need
			l.prepareSoon()
		}
		if cap(l.buf) > 4<<20 {
			l.buf = nil // a huge record's buffer is not kept
		}
		// Nothing of the batch is held past it.
		clear(pieces)
		l.pieces = pieces[:0]
		clear(l.writes)
	}
	l.mu.Lock()
	ticket := l.written
	l.written++
	if err == nil && large {
		// The records' bytes are in the page cache: the next batch
		// may be written while the disk writes these.
		l.passLeadLocked()
		passed = true
	}
	for l.finished != ticket {
		l.turn.Wait()
	}
	covered := ticket < l.covered && seg == l.coveredSeg
	upTo := l.written
	l.mu.Unlock()
	if err == nil {
		if covered {
			// Synced by the batch before, whose sync started once
			// this one was written; unless that sync failed.
			err = l.checkBroken(seg)
		} else if err = l.sync(seg); err == nil {
			l.covered, l.coveredSeg = upTo, seg
		}
	}
	if err == nil {
		seg.end.Store(start + need)
		l.bytes.Add(need)
		l.batches.Add(1)
		for _, p := range batch {
			if p.err != nil {
				continue
			}
			l.records.Add(uint64(len(p.recs)))
			if p.durable != nil {
				p.durable.Durable(p.refs)
			}
		}
	}
	if err != nil {
		// Under l.mu: the next batch, written meanwhile, may be
		// reading these errors (refuse).
		l.mu.Lock()
		for _, p := range batch {
			if p.err == nil {
				p.refs, p.err = nil, err
			}
		}
		l.mu.Unlock()
	}
	// The leader is batch[0]: it queued itself before taking the queue,
	// and a handed-off lead goes to the head of the queue.
	for i, p := range batch {
		// The refs returned keep p: not the records' bytes with it.
		p.recs, p.durable = nil, nil
		if i > 0 {
			p.done <- false
		}
	}
	l.mu.Lock()
	l.finished++
	l.turn.Broadcast()
	if l.quietLocked() {
		l.idle.Broadcast()
	}
	l.mu.Unlock()
	return passed
}

// directPart is the size from which a part is written from where it is
// rather than gathered into the batch's buffer: a write per part costs a
// system call, a copy costs a pass over the bytes.
const directPart = 64 << 10

// piece is a large part of a batch, written after the first gathered
// bytes of the batch's buffer.
type piece struct {
	gathered int
	part     []byte
}

// writes appends to out a batch's bytes in order: the gathered buffer cut
// where each large part goes.
func writes(out [][]byte, buf []byte, pieces []piece) [][]byte {
	at := 0
	for _, p := range pieces {
		if p.gathered > at {
			out = append(out, buf[at:p.gathered])
		}
		out = append(out, p.part)
		at = p.gathered
	}
	if len(buf) > at || len(out) == 0 {
		out = append(out, buf[at:])
	}
	return out
}

// write writes bufs one after another from off in segment s.
func (l *Log) write(s *segment, bufs [][]byte, off int64) error {
	failpoint.Hit("contentlog.write")
	if f, ok := s.f.(osFile); ok && len(bufs) > 1 {
		// A large part and the gathered bytes around it in one call.
		if err := f.writeVecAt(bufs, off); err != nil {
			return fmt.Errorf("content log: write segment %d: %w", s.id, err)
		}
		return nil
	}
	for _, b := range bufs {
		if _, err := s.f.WriteAt(b, off); err != nil {
			return fmt.Errorf("content log: write segment %d: %w", s.id, err)
		}
		off += int64(len(b))
	}
	return nil
}

// sync syncs segment s, written up to a batch whose turn it is, unless a
// sync of s failed before: a batch written after bytes of unknown state
// is not acknowledged either.
func (l *Log) sync(s *segment) error {
	if err := l.checkBroken(s); err != nil {
		return err
	}
	failpoint.Hit("contentlog.sync")
	if err := s.f.Sync(); err != nil {
		l.broken.Store(s.id)
		return &WriteError{Seg: s.id, Err: fmt.Errorf("content log: sync segment %d: %w", s.id, err)}
	}
	l.syncs.Add(1)
	return nil
}

// checkBroken fails a batch written into s after a sync of s failed.
func (l *Log) checkBroken(s *segment) error {
	if l.broken.Load() == s.id {
		return &WriteError{Seg: s.id, Err: fmt.Errorf("content log: segment %d: %w", s.id, errBrokenBefore)}
	}
	return nil
}

// errBrokenBefore fails a batch written while the sync of the batch before
// it, in the same segment, was failing.
var errBrokenBefore = errors.New("a sync of the records before these failed")

// appendHeader appends the header of the record whose payload is the
// concatenation of parts, at off in segment seg. It is written in buf
// itself: a header array of its own went to the heap with every record.
func appendHeader(buf []byte, seg uint64, off int64, parts [][]byte) []byte {
	var crc uint32
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
	}
	n := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, recordMagic)
	buf = binary.BigEndian.AppendUint32(buf, uint32(partsLen(parts)))
	buf = binary.BigEndian.AppendUint32(buf, crc)
	return binary.BigEndian.AppendUint32(buf, headerCRC(seg, off, buf[n:]))
}

func partsLen(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// reserve makes room for need bytes at the tail, starting a new segment when
// the active one is full (or failed), or when it was reserved with fallocate,
// is still mostly unwritten and a prepared spare is ready: its remaining
// syncs would each cost more than the spare's. Only the leader calls it.
//
// Before a new segment it waits for the batches still being synced
// (drain), and then reports drained.
func (l *Log) reserve(need int64) (drained bool, err error) {
	size := max(l.segSize, need)
	if l.active != nil && l.active.id == l.broken.Load() {
		// Its sync failed: nothing more is written after it.
		l.active = nil
	}
	if l.active != nil && l.tail+need <= l.active.size &&
		(l.active.prepared || l.tail >= l.active.size/4 || !l.spareFits(size)) {
		return false, nil
	}
	l.drain()
	var id uint64 = 1
	l.segMu.RLock()
	for sid := range l.segs {
		id = max(id, sid+1)
	}
	l.segMu.RUnlock()
	s, preparing, err := l.takeSpare(id, size)
	if err != nil {
		return true, err
	}
	if s == nil {
		s, err = l.allocate(id, size)
		if err != nil && preparing {
			// The zeros being written may be what took the disk the
			// new segment needed: the spare, once ready, is the
			// segment, and if its preparation fails its file is
			// gone and the disk with it.
			l.waitPrepared()
			if s, _, err = l.takeSpare(id, size); err == nil && s == nil {
				s, err = l.allocate(id, size)
			}
		}
		if err != nil {
			return true, err
		}
		if preparing && !s.prepared {
			slog.Info("content log: appends outran the preparation of the next segment; it is reserved with fallocate, whose syncs cost more until the next one",
				"segment", id)
		}
	}
	failpoint.Hit("contentlog.rotate")
	l.segMu.Lock()
	l.segs[id] = s
	l.segMu.Unlock()
	l.active, l.tail = s, 0
	return true, nil
}

// allocate creates segment id of size bytes reserved with fallocate (or its
// equivalent), and syncs the directory.
func (l *Log) allocate(id uint64, size int64) (*segment, error) {
	path := l.segPath(id)
	f, err := l.open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return nil, fmt.Errorf("content log: new segment: %w", err)
	}
	if err := f.Allocate(size); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("content log: new segment of %d bytes: %w", size, err)
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("content log: new segment: %w", err)
	}
	l.unprepared.Add(1)
	return &segment{id: id, f: f, size: size}, nil
}

// Rotate starts a new segment now, unless the one appends go to holds no
// record yet, so that the segment that was being appended to can be
// reclaimed (Reclaim never takes the last one). A caller rotates a segment
// whose records are mostly dead rather than wait for appends to fill it.
func (l *Log) Rotate() error {
	l.mu.Lock()
	for !l.quietLocked() {
		l.idle.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	// Lead, as an Append does, so that no batch is written meanwhile.
	l.leading = true
	l.mu.Unlock()
	var err error
	if l.active == nil || l.tail > 0 {
		l.active = nil
		_, err = l.reserve(0)
	}
	l.mu.Lock()
	l.passLeadLocked()
	l.mu.Unlock()
	return err
}

// StartNewSegment makes the next append start a new segment, leaving the
// rest of the current one as it is. A caller whose index points past the end
// Open found (damage in the middle of the last segment, not a torn write)
// calls it so that appends do not overwrite the records it still needs.
func (l *Log) StartNewSegment() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.quietLocked() {
		l.idle.Wait()
	}
	l.active = nil
}

// Read returns the payload of the record at ref, checked against its
// checksums: a mismatch is ErrDamaged, and none of its bytes are returned.
func (l *Log) Read(ref Ref) ([]byte, error) {
	return l.ReadAppend(nil, ref)
}

// ReadAppend is Read appending the payload to buf.
func (l *Log) ReadAppend(buf []byte, ref Ref) ([]byte, error) {
	n := len(buf)
	buf, at, err := l.ReadRecord(buf, ref)
	if err != nil {
		return buf, err
	}
	copy(buf[n:], buf[at:])
	return buf[:n+int(ref.Len)], nil
}

// ReadRecord is Read appending the record to buf as it is on disk, its
// header before the payload: it returns buf extended and where the payload
// starts in it (its end is buf's), or buf as it was and an error. A caller
// that wants only part of the payload takes it from there without moving
// the rest.
func (l *Log) ReadRecord(buf []byte, ref Ref) ([]byte, int, error) {
	l.segMu.RLock()
	s := l.segs[ref.Seg]
	l.segMu.RUnlock()
	if s == nil {
		return buf, 0, fmt.Errorf("content log: segment %d offset %d: segment missing: %w", ref.Seg, ref.Off, ErrDamaged)
	}
	n := len(buf)
	buf = slices.Grow(buf, int(ref.Size()))[:n+int(ref.Size())]
	rec := buf[n:]
	if _, err := s.f.ReadAt(rec, ref.Off); err != nil {
		if errors.Is(err, io.EOF) {
			return buf[:n], 0, fmt.Errorf("content log: segment %d offset %d: past the end: %w", ref.Seg, ref.Off, ErrDamaged)
		}
		return buf[:n], 0, fmt.Errorf("content log: read segment %d offset %d: %w", ref.Seg, ref.Off, err)
	}
	if binary.BigEndian.Uint32(rec) != recordMagic ||
		binary.BigEndian.Uint32(rec[4:]) != ref.Len ||
		binary.BigEndian.Uint32(rec[12:]) != headerCRC(ref.Seg, ref.Off, rec) ||
		crc32.Checksum(rec[headerSize:], castagnoli) != binary.BigEndian.Uint32(rec[8:]) {
		return buf[:n], 0, fmt.Errorf("segment %d offset %d: %w", ref.Seg, ref.Off, ErrDamaged)
	}
	return buf, n + headerSize, nil
}

// Scan calls fn for every record from position from to the end of the log,
// in log order, until fn returns an error, which Scan returns. A damaged
// record that valid ones follow is passed with a nil payload and an error
// wrapping ErrDamaged; payload is valid only until fn returns. A position
// past a segment's records, or in a segment reclaimed since, starts at the
// next segment. Scan is for recovery: it must not run concurrently with
// Append.
func (l *Log) Scan(from Pos, fn func(ref Ref, payload []byte, err error) error) error {
	l.segMu.RLock()
	var segs []*segment
	for _, s := range l.segs {
		if s.id >= from.Seg {
			segs = append(segs, s)
		}
	}
	l.segMu.RUnlock()
	slices.SortFunc(segs, func(a, b *segment) int { return cmpUint(a.id, b.id) })
	for _, s := range segs {
		off := int64(0)
		if s.id == from.Seg {
			off = from.Off
		}
		if err := l.scanSegment(s, off, fn); err != nil {
			return err
		}
	}
	return nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// End is the position where the next record will be written, as far as is
// known now.
func (l *Log) End() Pos {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var last *segment
	for _, s := range l.segs {
		if last == nil || s.id > last.id {
			last = s
		}
	}
	if last == nil {
		return Pos{}
	}
	return Pos{Seg: last.id, Off: last.end.Load()}
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	ID     uint64
	End    int64 // bytes of records in it (of a segment sealed before Open: its size)
	Active bool  // appends go to it
}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var last uint64
	for id := range l.segs {
		last = max(last, id)
	}
	out := make([]SegmentInfo, 0, len(l.segs))
	for id, s := range l.segs {
		out = append(out, SegmentInfo{ID: id, End: s.end.Load(), Active: id == last})
	}
	slices.SortFunc(out, func(a, b SegmentInfo) int { return cmpUint(a.ID, b.ID) })
	return out
}

// Reclaim deletes segment id, whose records no one needs any more, or keeps
// its file as the spare to prepare when there is none. The segment appends
// go to (the last one) is never reclaimed: reclaiming it is an error. Reads
// of its records fail afterwards with ErrDamaged.
func (l *Log) Reclaim(id uint64) error {
	l.segMu.Lock()
	s := l.segs[id]
	last := true
	for sid := range l.segs {
		if sid > id {
			last = false
		}
	}
	if s == nil {
		l.segMu.Unlock()
		return nil
	}
	if last {
		l.segMu.Unlock()
		return fmt.Errorf("content log: segment %d is the one being appended to", id)
	}
	delete(l.segs, id)
	l.segMu.Unlock()
	l.bytes.Add(-s.end.Load())
	failpoint.Hit("contentlog.reclaim")
	if l.recycle(s) {
		err := syncDir(l.dir)
		failpoint.Hit("contentlog.recycle")
		go l.prepare(s.f)
		if err != nil {
			return fmt.Errorf("content log: reclaim segment %d: %w", id, err)
		}
		return nil
	}
	s.f.Close()
	if err := os.Remove(l.segPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("content log: reclaim segment %d: %w", id, err)
	}
	return syncDir(l.dir)
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	return Stats{
		Records:    l.records.Load(),
		Batches:    l.batches.Load(),
		Syncs:      l.syncs.Load(),
		Bytes:      l.bytes.Load(),
		Prepared:   l.prepared.Load(),
		Unprepared: l.unprepared.Load(),
		Recycled:   l.recycled.Load(),
		SpareBytes: l.spareBytes(),
	}
}

// Close waits for the batch being written, cuts short the preparation of a
// spare, and closes the segment files. Appends after Close fail with
// ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	l.closed = true
	for !l.quietLocked() {
		l.idle.Wait()
	}
	l.mu.Unlock()
	return l.closeFiles()
}

func (l *Log) closeFiles() error {
	l.stopPreparing()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	var first error
	for id, s := range l.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
		delete(l.segs, id)
	}
	return first
}
