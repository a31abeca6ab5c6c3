package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// Store is the part of the daemon's store traces live in; *store.Store has
// it. Traces use their own buckets of the same bbolt file as the journal.
type Store interface {
	PutKVs(puts ...store.Put) error
	ScanKV(bucket string, from []byte, fn func(k, v []byte) (bool, error)) error
	ScanKVReverse(bucket string, from []byte, fn func(k, v []byte) (bool, error)) error
	DeleteKV(bucket string, keys [][]byte) error
}

// Sink receives every event once it is encoded, to keep it somewhere else
// too (PostgreSQL). Send must not block: a sink that cannot keep up drops
// events and counts them. Close flushes what it can, within its own
// deadline.
type Sink interface {
	Send(Entry)
	Close() error
}

// Entry is one encoded event as it was stored.
type Entry struct {
	// Event is the event with its id and sanitized fields.
	Event protocol.TraceEvent
	// JSON is Event encoded: valid JSON by construction. Do not modify it.
	JSON []byte
}

// Options configure a Tracer. The zero value takes every default.
type Options struct {
	// Retention is how long events are kept (default 7 days); negative
	// keeps them forever.
	Retention time.Duration
	// MaxBytes caps the stored events and their index entries, counted as
	// the bytes of their keys and values (default 256 MiB); negative means
	// no cap. A batch that takes the total over it deletes the oldest
	// events until the total is a tenth under it. The bbolt file never
	// shrinks, but the pages freed are reused, so the file stops growing.
	MaxBytes int64
	// PruneEvery is how often events past the retention are deleted
	// (default 1h; the first sweep runs a minute after Attach).
	PruneEvery time.Duration
	// Buffer is how many events may wait to be stored before Record drops
	// them (default 8192).
	Buffer int
	// MaxBatch is the most events written in one store transaction
	// (default 512); FlushEvery the longest an event waits for its batch to
	// fill (default 100ms).
	MaxBatch   int
	FlushEvery time.Duration
	// FollowBuffer is how many events may wait for one slow follower
	// before it misses some (default 1024).
	FollowBuffer int
	// Limits bound the size of each event.
	Limits Limits
	// FoldAppends is the most acknowledged appends of one session that
	// RecordAppend folds into one request event (default 1024; 1 records
	// each on its own), and FoldEvery the longest the first of them waits
	// for its event (default 1s).
	FoldAppends int
	FoldEvery   time.Duration
	// Rejected limits the rate of the events sent through Rejected.
	Rejected LimiterOptions
	// Sinks receive every event besides the store.
	Sinks  []Sink
	Clock  clock.Clock
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultRetention    = 7 * 24 * time.Hour
	DefaultPruneEvery   = time.Hour
	DefaultBuffer       = 8192
	DefaultMaxBatch     = 512
	DefaultFlushEvery   = 100 * time.Millisecond
	DefaultFollowBuffer = 1024
	DefaultMaxBytes     = 256 << 20
)

// Tracer is the daemon's Recorder: Record queues an event without waiting;
// a background batcher sanitizes and encodes events, stores them in the
// daemon's store keyed by time and by session, hands them to followers and
// sinks, and prunes events past the retention period.
//
// A Tracer is created before the store is open (New) and starts storing
// once the daemon attaches the store (Attach). Events recorded before that
// wait in the buffer.
type Tracer struct {
	opts Options
	log  *slog.Logger

	// mu orders Record against Close, so nothing is sent after the
	// batcher's last drain.
	mu     sync.RWMutex
	closed bool
	ch     chan Event

	st       Store
	attached chan struct{}
	flushes  chan chan struct{}
	// full wakes the batcher when a batch's worth of events waits.
	full    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	seq     uint64 // batcher only
	closing sync.Once

	followMu  sync.RWMutex
	followers map[*follower]struct{}

	pruneMu    sync.Mutex
	pruneTimer clock.Timer
	pruneOff   bool

	// foldMu guards the folds of acknowledged appends (RecordAppend) and
	// orders each against its session's other events.
	foldMu     sync.Mutex
	folds      map[string]*appendFold
	sweepTimer clock.Timer
	sweepOff   bool

	// rejected is the Limiter in front of the Tracer for Rejected.
	rejected *Limiter

	recorded, dropped, stored, storeErrors, pruned, evicted atomic.Uint64
	// bytes is the size of the stored events and index entries, as
	// MaxBytes counts it: summed at Attach, then kept up to date.
	bytes         atomic.Int64
	droppedLogged uint64 // batcher only
	lastDropLog   time.Time
}

// ErrNotAttached is returned by queries before the daemon attached its
// store.
var ErrNotAttached = errors.New("trace: no store attached")

// New returns a Tracer that queues events until Attach.
func New(opts Options) *Tracer {
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = DefaultPruneEvery
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	if opts.FollowBuffer <= 0 {
		opts.FollowBuffer = DefaultFollowBuffer
	}
	if opts.FoldAppends <= 0 {
		opts.FoldAppends = DefaultFoldAppends
	}
	if opts.FoldEvery <= 0 {
		opts.FoldEvery = DefaultFoldEvery
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tracer{
		opts:      opts,
		log:       log,
		ch:        make(chan Event, opts.Buffer),
		attached:  make(chan struct{}),
		flushes:   make(chan chan struct{}),
		full:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		followers: make(map[*follower]struct{}),
		folds:     make(map[string]*appendFold),
	}
	if opts.Rejected.Clock == nil {
		opts.Rejected.Clock = opts.Clock
	}
	t.rejected = NewLimiter(t, opts.Rejected)
	go t.loop()
	return t
}

// Rejected is the Recorder for the events of rejected requests: it passes
// them to the Tracer at a bounded rate and summarizes the rest (see
// Limiter), so that a flood of bad requests cannot fill the store.
func (t *Tracer) Rejected() Recorder { return t.rejected }

// Record queues ev and returns at once; when the buffer is full the event
// is dropped and counted (TraceStats.Dropped). A zero ev.Time means now.
// Record copies ev.Fields itself but not the values in it: do not modify
// them afterwards. Requests for trace.* methods are not recorded, so that
// reading traces does not write them. An event of a session first records
// the session's folded appends (RecordAppend).
func (t *Tracer) Record(ev Event) {
	if ev.Type == protocol.TraceRequest && strings.HasPrefix(ev.Method, "trace.") {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = t.opts.Clock.Now()
	}
	if len(ev.Fields) > 0 {
		ev.Fields = maps.Clone(ev.Fields)
	}
	if ev.SessionID == "" {
		t.enqueue(ev)
		return
	}
	// The session's folded appends come first: they happened before.
	t.foldMu.Lock()
	defer t.foldMu.Unlock()
	t.foldOut(ev.SessionID)
	t.enqueue(ev)
}

// enqueue hands ev to the batcher, or drops and counts it.
func (t *Tracer) enqueue(ev Event) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		t.dropped.Add(1)
		return
	}
	select {
	case t.ch <- ev:
		t.recorded.Add(1)
		if len(t.ch) >= t.opts.MaxBatch {
			select {
			case t.full <- struct{}{}:
			default:
			}
		}
	default:
		t.dropped.Add(1)
	}
}

// Attach starts storing events in st, and pruning them. It reads the last
// event's key so that keys stay unique across restarts.
func (t *Tracer) Attach(st Store) error {
	if st == nil {
		return errors.New("trace: Attach with a nil store")
	}
	select {
	case <-t.attached:
		return errors.New("trace: already attached")
	default:
	}
	err := st.ScanKVReverse(bucketEvents, nil, func(k, _ []byte) (bool, error) {
		if len(k) == keyLen {
			t.seq = keySeq(k) + 1
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	// The total MaxBytes caps is not stored: summing it once here costs a
	// walk of what is at most MaxBytes of keys and values, and can never
	// disagree with the buckets.
	var total int64
	for _, b := range []string{bucketEvents, bucketSessions} {
		err := st.ScanKV(b, nil, func(k, v []byte) (bool, error) {
			total += int64(len(k) + len(v))
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	t.bytes.Store(total)
	t.st = st
	close(t.attached)
	t.pruneMu.Lock()
	if !t.pruneOff && t.opts.Retention > 0 {
		t.pruneTimer = t.opts.Clock.AfterFunc(time.Minute, t.pruneTick)
	}
	t.pruneMu.Unlock()
	return nil
}

// Close stores what is queued, stops followers and pruning, and closes the
// sinks. Events recorded afterwards are dropped. Call it before the store
// closes. It is safe to call more than once.
func (t *Tracer) Close() error {
	var err error
	t.closing.Do(func() {
		// Folded appends are recorded, and later ones go out one by
		// one (to be dropped and counted).
		t.foldMu.Lock()
		t.sweepOff = true
		if t.sweepTimer != nil {
			t.sweepTimer.Stop()
			t.sweepTimer = nil
		}
		for s := range t.folds {
			t.foldOut(s)
		}
		t.foldMu.Unlock()
		// The count of the last rejected requests held back goes in
		// before the batcher's last drain.
		t.rejected.Stop()
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		close(t.quit)
		<-t.done
		t.pruneMu.Lock()
		t.pruneOff = true
		if t.pruneTimer != nil {
			t.pruneTimer.Stop()
		}
		t.pruneMu.Unlock()
		t.followMu.Lock()
		for f := range t.followers {
			delete(t.followers, f)
			close(f.ch)
		}
		t.followMu.Unlock()
		var errs []error
		for _, s := range t.opts.Sinks {
			errs = append(errs, s.Close())
		}
		err = errors.Join(errs...)
	})
	return err
}

// Stats reports what happened to events since New.
func (t *Tracer) Stats() protocol.TraceStats {
	ret := t.opts.Retention
	if ret < 0 {
		ret = 0
	}
	return protocol.TraceStats{
		Recorded:    t.recorded.Load(),
		Dropped:     t.dropped.Load(),
		Stored:      t.stored.Load(),
		StoreErrors: t.storeErrors.Load(),
		Pruned:      t.pruned.Load(),
		RetentionMS: ret.Milliseconds(),
		Bytes:       t.bytes.Load(),
		MaxBytes:    max(t.opts.MaxBytes, 0),
		Evicted:     t.evicted.Load(),
		Suppressed:  t.rejected.Suppressed(),
	}
}

// Flush waits until every event recorded before the call is stored. It
// returns at once, having done nothing, before Attach or after Close.
func (t *Tracer) Flush() {
	select {
	case <-t.attached:
	default:
		return
	}
	t.foldAll()
	done := make(chan struct{})
	select {
	case t.flushes <- done:
		<-done
	case <-t.done:
	}
}

// loop is the batcher: it waits for the store, then writes events in
// batches of up to MaxBatch, at most FlushEvery after the first of a batch
// arrived.
func (t *Tracer) loop() {
	defer close(t.done)
	select {
	case <-t.attached:
	case <-t.quit:
		// Never attached: the sinks still get what was recorded.
		t.write(t.drain(nil))
		return
	}
	// A store filled before the cap (or under a larger one) is brought
	// under it before anything new is added.
	t.evict(0)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	pending := make([]Event, 0, t.opts.MaxBatch)
	for {
		// Once a batch has begun, the events after its first wait in the
		// channel until the batch is written: a batcher receiving each
		// one as it comes was woken (a futex and a thread's wakeup) for
		// every event, five times for a whole-file write. A full batch
		// wakes it early (enqueue).
		in := t.ch
		if armed {
			in = nil
		}
		select {
		case ev := <-in:
			pending = append(pending, ev)
			timer.Reset(t.opts.FlushEvery)
			armed = true
		case <-t.full:
			t.write(t.drain(pending))
			pending = pending[:0]
		case <-timer.C:
			armed = false
			t.write(t.drain(pending))
			pending = pending[:0]
		case done := <-t.flushes:
			t.write(t.drain(pending))
			pending = pending[:0]
			close(done)
		case <-t.quit:
			t.write(t.drain(pending))
			return
		}
	}
}

// drain appends every queued event to pending.
func (t *Tracer) drain(pending []Event) []Event {
	for {
		select {
		case ev := <-t.ch:
			pending = append(pending, ev)
		default:
			return pending
		}
	}
}

// write encodes events, stores them and hands them on.
func (t *Tracer) write(events []Event) {
	for len(events) > 0 {
		n := t.writeBatch(events[:min(len(events), t.opts.MaxBatch)])
		events = events[n:]
	}
	t.logDrops()
}

// writeBatch stores a batch of events from the first of events, one
// transaction, and returns how many it took: all of them, unless under a
// MaxBytes cap they come to more than a quarter of it, so that making room
// for a batch never has to delete most of what is kept.
func (t *Tracer) writeBatch(events []Event) int {
	entries := make([]Entry, 0, len(events))
	kvs := make([]store.KV, 0, len(events))
	var index []store.KV
	var size int64
	budget := t.opts.MaxBytes / 4
	for _, ev := range events {
		k := eventKey(ev.Time, t.seq)
		e := t.encode(ev, k)
		esize := int64(len(k) + len(e.JSON))
		var ik []byte
		if e.Event.SessionID != "" {
			ik = indexKey(e.Event.SessionID, k)
			esize += int64(len(ik))
		}
		if budget > 0 && len(entries) > 0 && size+esize > budget {
			break
		}
		t.seq++
		entries = append(entries, e)
		kvs = append(kvs, store.KV{Key: k, Value: e.JSON})
		if ik != nil {
			index = append(index, store.KV{Key: ik, Value: []byte{}})
		}
		size += esize
	}
	if t.st != nil {
		// Room first, so the stored total never exceeds the cap (unless
		// one event does by itself).
		t.evict(size)
		// Events and their index entries in one transaction: a commit of
		// its own for the index would cost every batch a second pair of
		// fsyncs, queued with the appends, and could leave an index
		// entry without its event after a crash.
		puts := []store.Put{{Bucket: bucketEvents, KVs: kvs}}
		if len(index) > 0 {
			puts = append(puts, store.Put{Bucket: bucketSessions, KVs: index})
		}
		if err := t.st.PutKVs(puts...); err != nil {
			t.storeErrors.Add(1)
			t.log.Warn("storing trace events", "events", len(kvs), "err", err)
		} else {
			t.stored.Add(uint64(len(kvs)))
			t.bytes.Add(size)
		}
	}
	t.fanOut(entries)
	for _, s := range t.opts.Sinks {
		for _, e := range entries {
			s.Send(e)
		}
	}
	return len(entries)
}

// encode sanitizes ev into its stored form. It never fails: whatever the
// fields hold, the result is valid JSON.
func (t *Tracer) encode(ev Event, k []byte) Entry {
	lim := t.opts.Limits
	te := protocol.TraceEvent{
		ID:        eventID(k),
		Time:      keyTime(k),
		Type:      protocol.TraceType(CleanString(string(ev.Type), lim.MaxKey)),
		SessionID: CleanString(ev.SessionID, lim.MaxKey),
		Method:    CleanString(ev.Method, lim.MaxKey),
	}
	switch {
	case len(ev.Attrs) == 0:
		te.Fields = encodeFields(ev.Fields, lim)
	case len(ev.Fields) == 0:
		te.Fields = encodeAttrs(ev.Attrs, lim)
	default:
		te.Fields = encodeFields(fieldsOf(ev.Fields, ev.Attrs), lim)
	}
	if te.Type == "" {
		te.Type = "unknown"
	}
	if b, ok := appendEvent(nil, &te); ok {
		return Entry{Event: te, JSON: b}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(te); err != nil {
		// Unreachable with sanitized fields; keep the event, not the fields.
		te.Fields = marshal(map[string]any{truncatedKey: CleanString("fields could not be encoded: "+err.Error(), DefaultMaxString)})
		buf.Reset()
		enc.Encode(te)
	}
	return Entry{Event: te, JSON: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}
}

// logDrops warns, at most once a minute, that events were dropped.
func (t *Tracer) logDrops() {
	d := t.dropped.Load()
	if d == t.droppedLogged {
		return
	}
	now := time.Now()
	if now.Sub(t.lastDropLog) < time.Minute {
		return
	}
	t.log.Warn("trace buffer full: events dropped", "dropped", d-t.droppedLogged, "dropped_total", d)
	t.droppedLogged, t.lastDropLog = d, now
}
