package session

import (
	"sync"

	"github.com/orion-agent/orion/internal/store"
)

// A session's appends are pipelined: an append puts its chunk in order
// (the seq checks, the scanner, the record) and in the journal's queue
// under the session's lock, and waits for the journal's sync without it,
// so that the session's next chunk, sent before this one's reply, joins the
// same sync instead of waiting for it. Its reply still waits for its
// chunk to be durable.
//
// The session's record (entry.rec) is then ahead of the journal by the
// chunks in flight. Each keeps the record as it was before it (its
// rollback): a chunk that fails takes the record back there, and the chunks
// queued after it, which the journal refuses unwritten (store.Appending's
// after), are dropped with it, so a retry of the failed seq is accepted and
// nothing acknowledged is lost or stored twice. Everyone else who locks the
// session (entryLock.Lock) waits until no chunk is in flight, and so sees
// it exactly as journaled.

// entryLock is an entry's lock (entry.mu).
type entryLock struct {
	mu sync.Mutex
	// cond, on mu, is signalled when a chunk in flight is done.
	cond sync.Cond
	// flight is the session's chunks in the journal's queue, not yet
	// done, oldest first; guarded by mu.
	flight []inflight
	// lockers counts the Lock calls waiting for the chunks in flight:
	// appends wait for them, so that a stream does not starve a finalize.
	lockers int
	// waiting counts the goroutines in wait, for tests.
	waiting int
	// nextID numbers the chunks put in flight.
	nextID uint64
	// hashing is the latest chunk added to the session's running sum
	// beside its journaling (sumChunk), if any.
	hashing *sumJob
}

// inflight is one chunk in the journal's queue.
type inflight struct {
	id  uint64
	seq uint64
	// rollback is the record as it was before this chunk: where a failure
	// of it takes the session back to.
	rollback record
	// journal is the chunk's place in the journal's queue; the session's
	// next chunk is written only if this one is.
	journal *store.Appending
	// base is the target's content at begin that this chunk journals,
	// counted out once it is durable.
	base *heldBase
	// durable is set once the chunk is, until it is dropped from the
	// front of flight.
	durable bool
}

// Lock locks the entry once no chunk of its session is in flight.
func (l *entryLock) Lock() {
	l.mu.Lock()
	if len(l.flight) == 0 {
		return
	}
	l.lockers++
	for len(l.flight) > 0 {
		l.wait()
	}
	if l.lockers--; l.lockers == 0 {
		l.cond.Broadcast() // appends that waited for this Lock
	}
}

// TryLock locks the entry if it is free and no chunk is in flight.
func (l *entryLock) TryLock() bool {
	if !l.mu.TryLock() {
		return false
	}
	if len(l.flight) > 0 {
		l.mu.Unlock()
		return false
	}
	return true
}

// Unlock unlocks the entry.
func (l *entryLock) Unlock() { l.mu.Unlock() }

// lockAppend locks the entry for an append, which may go ahead of chunks
// in flight, unless a Lock waits for them to be done.
func (l *entryLock) lockAppend() {
	l.mu.Lock()
	for l.lockers > 0 {
		l.wait()
	}
}

// wait waits, mu held, for a chunk in flight to be done or a Lock to be
// taken.
func (l *entryLock) wait() {
	l.cond.L = &l.mu
	l.waiting++
	l.cond.Wait()
	l.waiting--
}

// inFlight reports whether the chunk seq is in flight, mu held.
func (l *entryLock) inFlight(seq uint64) bool {
	for i := range l.flight {
		if l.flight[i].seq == seq {
			return true
		}
	}
	return false
}

// last is the journal's place of the session's latest chunk in flight, nil
// when none is; mu held.
func (l *entryLock) last() *store.Appending {
	if n := len(l.flight); n > 0 {
		return l.flight[n-1].journal
	}
	return nil
}

// index returns where chunk id stands in flight, or -1 once it was dropped
// (a chunk before it failed).
func (l *entryLock) index(id uint64) int {
	for i := range l.flight {
		if l.flight[i].id == id {
			return i
		}
	}
	return -1
}

// durableRecord is the session's record as journaled: before its oldest
// chunk in flight, or the entry's own when none is. mu held.
func (e *entry) durableRecord() *record {
	if len(e.mu.flight) > 0 {
		return &e.mu.flight[0].rollback
	}
	return &e.rec
}

// settle records the outcome of chunk id, which err failed or not: a
// durable chunk is done once those before it are; a failed one takes the
// record back to before it and drops the chunks after it (the journal
// refuses them). mu held. It reports whether the chunk's own state still
// stands (false: a failure before it dropped it).
func (e *entry) settle(id uint64, err error) bool {
	l := &e.mu
	i := l.index(id)
	if i < 0 {
		return false
	}
	if err != nil {
		e.rec = l.flight[i].rollback
		// The running sum took chunks the journal did not.
		e.rec.sum = nil
		clear(l.flight[i:])
		l.flight = l.flight[:i]
	} else {
		l.flight[i].durable = true
		l.flight[i].base.release()
		n := 0
		for n < len(l.flight) && l.flight[n].durable {
			n++
		}
		if n > 0 {
			clear(l.flight[:n])
			l.flight = append(l.flight[:0], l.flight[n:]...)
			clear(l.flight[len(l.flight):cap(l.flight)])
		}
	}
	// Listings show the session as journaled.
	e.durableRecord().publish()
	l.cond.Broadcast()
	return err == nil
}
