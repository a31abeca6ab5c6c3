package trace

import (
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Append is one acknowledged session.append, as RecordAppend takes it.
type Append struct {
	SessionID string
	// Start is when the daemon began handling the request; Duration how
	// long it took.
	Start    time.Time
	Duration time.Duration
	// Seq, Bytes and EndMarkerSeen are from the acknowledgement: Bytes is
	// the content received so far, not the chunk's size.
	Seq           uint64
	Bytes         int64
	EndMarkerSeen bool
}

// AppendRecorder is a Recorder that takes acknowledged appends on their
// own, to fold them into fewer events. The daemon uses it when its
// Recorder has it; failed appends still go through Record (or Rejected),
// one event each.
type AppendRecorder interface {
	Recorder
	RecordAppend(Append)
}

// Defaults for Options.FoldAppends and Options.FoldEvery.
const (
	DefaultFoldAppends = 1024
	DefaultFoldEvery   = time.Second
)

// Fields of a folded append event besides those of a single append's
// (duration_ms, seq, bytes, end_marker_seen). A fold of one append has
// none of them, so it reads exactly as one request event did before.
const (
	// FieldAppends is how many acknowledged appends the event stands for.
	FieldAppends = "appends"
	// FieldFirstSeq is the lowest seq of them; "seq" is the highest.
	FieldFirstSeq = "first_seq"
	// FieldMaxDuration is the slowest one's duration_ms; "duration_ms" is
	// their sum.
	FieldMaxDuration = "max_duration_ms"
	// FieldEndMarkerSeq is the lowest seq whose acknowledgement saw the
	// end marker.
	FieldEndMarkerSeq = "end_marker_seq"
)

// appendFold is the running aggregate of one session's acknowledged
// appends since its last event. Appends of one session may be traced out
// of order (the next is handled while the previous one's reply is being
// sent), so it keeps the lowest and highest seq rather than the first and
// last seen.
type appendFold struct {
	n           int
	start       time.Time
	first, last uint64
	bytes       int64 // at seq last
	marker      uint64
	hasMarker   bool
	total, slow time.Duration
}

func (f *appendFold) add(a Append) {
	if f.n == 0 || a.Start.Before(f.start) {
		f.start = a.Start
	}
	if f.n == 0 || a.Seq < f.first {
		f.first = a.Seq
	}
	if f.n == 0 || a.Seq >= f.last {
		f.last, f.bytes = a.Seq, a.Bytes
	}
	if a.EndMarkerSeen && (!f.hasMarker || a.Seq < f.marker) {
		f.marker, f.hasMarker = a.Seq, true
	}
	f.n++
	f.total += a.Duration
	f.slow = max(f.slow, a.Duration)
}

// event is the request event the fold stands for.
func (f *appendFold) event(session string) Event {
	attrs := make([]Attr, 4, 8)
	attrs[0] = Millis("duration_ms", f.total)
	attrs[1] = Uint("seq", f.last)
	attrs[2] = Int("bytes", f.bytes)
	attrs[3] = Bool("end_marker_seen", f.hasMarker)
	if f.n > 1 {
		attrs = append(attrs, Int(FieldAppends, int64(f.n)), Uint(FieldFirstSeq, f.first), Millis(FieldMaxDuration, f.slow))
		if f.hasMarker {
			attrs = append(attrs, Uint(FieldEndMarkerSeq, f.marker))
		}
	}
	return Event{Time: f.start, Type: protocol.TraceRequest, SessionID: session,
		Method: protocol.MethodSessionAppend, Attrs: attrs}
}

// millis is d in milliseconds, to the microsecond, as request events give
// durations.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// RecordAppend adds an acknowledged append to its session's fold. The fold
// is recorded as one request event when the session records any other
// event (a stage change, a write, a failed request), when it holds
// FoldAppends appends or its first is FoldEvery old, and at Flush (so
// trace.list sees it) and Close. An append's JSON encoding and store write
// cost more than the append's own bookkeeping did; a fold costs one per
// session a FoldEvery at most.
func (t *Tracer) RecordAppend(a Append) {
	if a.SessionID == "" || t.opts.FoldAppends <= 1 {
		t.Record(t.single(a))
		return
	}
	t.foldMu.Lock()
	defer t.foldMu.Unlock()
	if t.sweepOff {
		// Closed: nothing would record the fold.
		t.enqueue(t.single(a))
		return
	}
	f := t.folds[a.SessionID]
	if f == nil {
		f = &appendFold{}
		t.folds[a.SessionID] = f
		t.armSweep()
	}
	f.add(a)
	if f.n >= t.opts.FoldAppends || a.Start.Add(a.Duration).Sub(f.start) >= t.opts.FoldEvery {
		delete(t.folds, a.SessionID)
		t.enqueue(f.event(a.SessionID))
	}
}

// single is the event of one append, unfolded.
func (t *Tracer) single(a Append) Event {
	var f appendFold
	f.add(a)
	return f.event(a.SessionID)
}

// foldOut records the fold of session, if any, before the session's next
// event: the ladder reads events in order. Call it with foldMu held.
func (t *Tracer) foldOut(session string) {
	if f := t.folds[session]; f != nil {
		delete(t.folds, session)
		t.enqueue(f.event(session))
	}
}

// foldAll records every fold, for Flush and Close.
func (t *Tracer) foldAll() {
	t.foldMu.Lock()
	defer t.foldMu.Unlock()
	for s := range t.folds {
		t.foldOut(s)
	}
}

// armSweep schedules sweep unless it is scheduled: a session that stops
// appending, and records nothing else, still has its appends recorded
// within about two FoldEvery. Call it with foldMu held.
func (t *Tracer) armSweep() {
	if t.sweepTimer != nil || t.sweepOff {
		return
	}
	t.sweepTimer = t.opts.Clock.AfterFunc(t.opts.FoldEvery, t.sweep)
}

// sweep records the folds whose first append is FoldEvery old, and comes
// back while any remain.
func (t *Tracer) sweep() {
	t.foldMu.Lock()
	defer t.foldMu.Unlock()
	t.sweepTimer = nil
	now := t.opts.Clock.Now()
	for s, f := range t.folds {
		if now.Sub(f.start) >= t.opts.FoldEvery {
			t.foldOut(s)
		}
	}
	if len(t.folds) > 0 {
		t.armSweep()
	}
}
