package store

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/orion-agent/orion/internal/contentlog"
	"github.com/orion-agent/orion/internal/failpoint"

	bolt "go.etcd.io/bbolt"
)

// errNothingChanged rolls back a batch in which no request changed anything.
var errNothingChanged = errors.New("nothing changed")

// A request is one write waiting for the committer.
//
// apply must be idempotent: it runs once in a batch and, if the batch fails,
// again in a transaction of its own. It may return ErrNotFound only before
// changing anything; the committer then reports it to this request without
// failing the batch. Any other error aborts the transaction it runs in.
type request struct {
	apply func(tx *bolt.Tx) error
	// entry, when set instead of apply and notify, is the deferred index
	// entry of an Append, which applies itself.
	entry *indexEntry
	// index, on a deferred index entry, says which chunk it indexes.
	index *pendingIndex
	done  chan error // buffered, so the committer never waits on a caller
	// notify, when set instead of done, receives the outcome of a
	// deferred write (see writeLater).
	notify func(error)
	// metaBytes, on a deferred index entry, is what it counts in
	// deferredBytes: a requeued entry must count again as much.
	metaBytes int
}

// pendingIndex names the chunk a deferred index entry is for, or, when
// metaOnly, the metadata record of a LogMeta (no chunk: ref is the record).
type pendingIndex struct {
	key      []byte
	seq      uint64
	ref      chunkRef
	metaOnly bool
}

// run applies r in tx, a transaction of the committer's.
func (s *Store) run(tx *bolt.Tx, r *request) error {
	if r.entry != nil {
		return r.entry.apply(tx)
	}
	// Any other write may change what the entries looked up.
	s.itx.forget()
	return r.apply(tx)
}

// finish hands the request its outcome.
func (r *request) finish(err error) {
	if r.entry != nil {
		// Called only once the entry is committed: one whose commit
		// fails is queued again (requeue).
		r.entry.committed()
		return
	}
	if r.notify != nil {
		r.notify(err)
		return
	}
	r.done <- err
}

// write commits apply and returns once its transaction is durable or has
// failed.
//
// A writer that finds no commit running and nothing queued commits in its
// own goroutine: handing a lone write to the committer and back costs two
// goroutine wakeups, usually on other threads, which measured 7-15% of a
// commit's time. Everyone else queues for the committer and shares its
// commits.
func (s *Store) write(apply func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	// Committing inline saves a lone writer two goroutine handoffs, but
	// only while writes really come alone: under concurrency a writer that
	// slipped in between batches would commit by itself and halve the
	// throughput, so the last batch's size decides.
	if s.lastBatch.Load() <= 1 && s.commitMu.TryLock() {
		if len(s.reqs) == 0 && !s.hasDeferred() {
			err := s.commitAlone(apply, true)
			s.commitMu.Unlock()
			s.mu.RUnlock()
			return err
		}
		s.commitMu.Unlock()
	}
	r := &request{apply: apply, done: make(chan error, 1)}
	s.reqs <- r
	s.mu.RUnlock()
	return <-r.done
}

// commitLoop commits whatever has queued up while the previous commit was
// syncing, up to maxBatch requests, in one transaction. It never waits for
// more requests to arrive: a lone writer pays exactly one commit, and under
// load batches grow by themselves because requests pile up during each
// commit's fsyncs.
func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*request, 0, s.maxBatch)
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		// Drain only once the lock is ours: whatever arrives while a
		// writer commits inline joins this batch.
		s.commitMu.Lock()
		batch = append(batch[:0], r)
		open := true
	drain:
		for len(batch) < s.maxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commit(batch)
		s.commitMu.Unlock()
		clear(batch) // let the requests' buffers be collected while we wait
		if !open {
			return
		}
	}
}

// commit applies batch in one transaction and replies to each request after
// the transaction has returned. If the transaction fails, each request is
// retried in a transaction of its own so that one bad request, or one
// transient failure, cannot fail the others.
//
// Deferred writes (writeLater) go first: they were queued before anything
// in batch, and a later write of the same session must land after them.
// They are taken here, with commitMu held, so no two commits reorder them.
func (s *Store) commit(batch []*request) {
	s.lastBatch.Store(int32(len(batch)))
	if later := s.takeDeferred(); len(later) > 0 {
		batch = append(later, batch...)
	}
	errs := make([]error, len(batch))
	applied := 0
	err := s.update(func(tx *bolt.Tx) error {
		applied = 0
		for i, r := range batch {
			errs[i] = s.run(tx, r)
			switch {
			case errs[i] == nil:
				applied++
			case !errors.Is(errs[i], ErrNotFound):
				return errs[i]
			}
		}
		if applied == 0 {
			// Every request failed before changing anything; a
			// commit would cost two fsyncs for nothing.
			return errNothingChanged
		}
		return s.applyFence(tx)
	})
	if err == nil || err == errNothingChanged {
		if err == nil {
			s.commits.Add(1)
			s.writes.Add(uint64(applied))
		}
		for i, r := range batch {
			r.finish(errs[i])
		}
		return
	}
	if len(batch) == 1 && batch[0].index == nil {
		if err != errs[0] {
			err = commitError(err)
		}
		batch[0].finish(err)
		return
	}
	// The index entries are retried together, in log order, and
	// everything else after them, alone: meta/logpos, which each entry
	// moves to its record's end, must never pass an entry that is not
	// committed, or the next Open would not index that entry's chunk.
	var index, rest []*request
	for _, r := range batch {
		if r.index != nil {
			index = append(index, r)
		} else {
			rest = append(rest, r)
		}
	}
	if len(index) > 0 {
		// Alone, they have just failed: they wait for the next commit.
		if len(rest) > 0 {
			err = s.commitIndex(index)
		} else {
			err = commitError(err)
		}
		if err != nil {
			// Nothing may commit before them either: a later
			// write of their sessions would land before them.
			s.requeue(index, err)
			for _, r := range rest {
				r.finish(err) // a commit error already
			}
			return
		}
	}
	for _, r := range rest {
		// Not with the fence: the index entries before it would not all
		// be in the same commit.
		r.finish(s.commitAlone(r.apply, false))
	}
}

// commitIndex commits deferred index entries, in the order given, in one
// transaction, and hands them their outcome if it succeeds.
func (s *Store) commitIndex(index []*request) error {
	err := s.update(func(tx *bolt.Tx) error {
		for _, r := range index {
			if err := s.run(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return commitError(err)
	}
	s.commits.Add(1)
	s.writes.Add(uint64(len(index)))
	for _, r := range index {
		r.finish(nil)
	}
	return nil
}

// requeue puts index entries whose commit failed back at the head of the
// deferred writes, so that the next commit takes them first: their records
// are durable and acknowledged, and only a commit of theirs, or a replay at
// the next Open, may move meta/logpos past them. They stay pending, so
// reads still find their chunks.
func (s *Store) requeue(index []*request, err error) {
	slog.Error("store: indexing appended chunks failed; they are retried with the next commit, or indexed from the content log at the next start",
		"appends", len(index), "err", err)
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	s.deferred = append(index, s.deferred...)
	s.deferredN += len(index)
	for _, r := range index {
		s.deferredBytes += r.metaBytes
	}
	if s.deferTimer == nil && !s.closing {
		s.deferTimer = time.AfterFunc(s.deferDelay, s.flushDeferred)
	}
}

// commitAlone commits apply in a transaction of its own, with the fence
// (see fence.go) when fence is set: the caller has made sure that no
// deferred index entry waits.
func (s *Store) commitAlone(apply func(tx *bolt.Tx) error, fence bool) error {
	var applyErr error
	err := s.update(func(tx *bolt.Tx) error {
		if applyErr = apply(tx); applyErr != nil {
			return applyErr
		}
		if fence {
			return s.applyFence(tx)
		}
		return nil
	})
	switch {
	case err == nil:
		s.commits.Add(1)
		s.writes.Add(1)
	case err != applyErr:
		err = commitError(err)
	}
	return err
}

// update runs fn in a bbolt transaction of the committer.
func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	// Odd while the transaction runs: its commit takes effect before
	// Update returns, so Used keeps no measure taken meanwhile. Counted
	// whatever the outcome: a failed commit may still have grown the
	// file.
	s.updates.Add(1)
	defer s.updates.Add(1)
	return s.db.Update(func(tx *bolt.Tx) error {
		s.itx.reset()
		defer s.itx.reset()
		if err := fn(tx); err != nil {
			return err
		}
		if err := s.itx.finish(tx); err != nil {
			return err
		}
		if s.commitFault != nil {
			return s.commitFault()
		}
		return nil
	})
}

// commitError wraps a failure of the commit itself, as opposed to one of the
// writes in it: the file system refused the data, and the write is not
// durable.
func commitError(err error) error {
	return fmt.Errorf("store: commit: %w", err)
}

// defaultDeferDelay is the longest a deferred write waits for another
// commit to ride: after it, the write commits by itself. It bounds the
// window in which a crash leaves a finished session to recovery (see
// writeLater).
const defaultDeferDelay = time.Second

// writeLater queues apply to be committed with the next commit, whoever
// makes it, or by itself after Options.DeferDelay, and returns at once; notify
// (which must not block) receives the outcome. It is for bookkeeping whose
// loss in a crash recovery repairs, such as the record of a finalize whose
// file is already durable: it then costs no fsync of its own while writes
// keep coming.
func (s *Store) writeLater(apply func(tx *bolt.Tx) error, notify func(error)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		notify(ErrClosed)
		return
	}
	s.deferMu.Lock()
	s.deferred = append(s.deferred, &request{apply: apply, notify: notify})
	if s.deferTimer == nil {
		s.deferTimer = time.AfterFunc(s.deferDelay, s.flushDeferred)
	}
	s.deferMu.Unlock()
}

// Deferred index entries are committed without waiting for DeferDelay once
// this many wait, or their metadata takes this many bytes: they hold memory,
// and a commit of thousands of entries is long for the writes queued behind
// it.
const (
	maxDeferredEntries = 2048
	maxDeferredBytes   = 4 << 20
)

// deferIndex queues e, the index entry of a chunk whose record the log
// has synced, to ride the next commit. The log calls it in log order, so
// the entries queue in that order, and a commit that takes them indexes a
// prefix of the log: it records the end of its last entry as meta/logpos.
func (s *Store) deferIndex(e *indexEntry) {
	e.s = s
	e.req = request{entry: e, index: &e.pi}
	s.deferEntry(e.id, &e.req, len(e.meta))
}

// indexEntry is the deferred index entry of an Append: the chunk's ref
// (pi), the session's metadata, the content buckets' values vals written in
// the same batch after the chunk, and end, where that batch's last record
// ends. It is a part of the Appending, and applies itself (run), so that
// queueing it allocates nothing: its closures, key and request took five
// allocations per append.
type indexEntry struct {
	s    *Store
	req  request
	pi   pendingIndex
	id   string
	meta []byte
	vals []deferredValue
	end  contentlog.Pos
}

// apply writes the entry in tx, a transaction of the committer's.
func (e *indexEntry) apply(tx *bolt.Tx) error {
	s := e.s
	if err := s.putIndexIn(tx, &s.itx, e.pi.key, e.pi.seq, e.pi.ref, e.meta); err != nil {
		return err
	}
	if err := s.putValues(tx, e.vals); err != nil {
		return err
	}
	s.itx.indexedTo(e.end)
	return nil
}

// committed is told the entry's commit succeeded.
func (e *indexEntry) committed() {
	e.s.indexDone.Add(1)
	e.s.unpend(e.id, &e.req)
}

// deferMeta is deferIndex for a LogMeta's batch: its metadata record at
// ref, then the values vals, ending at end.
func (s *Store) deferMeta(id string, ref contentlog.Ref, meta []byte, vals []deferredValue, end contentlog.Pos) {
	key := []byte(id)
	r := &request{index: &pendingIndex{key: key, ref: chunkRef{rec: ref}, metaOnly: true}}
	r.apply = func(tx *bolt.Tx) error {
		if err := putMeta(tx, key, meta); err != nil {
			return err
		}
		if err := s.putValues(tx, vals); err != nil {
			return err
		}
		return setLogPos(tx, end)
	}
	// Called only once the entry is committed: one whose commit fails is
	// queued again (requeue).
	r.notify = func(error) {
		s.indexDone.Add(1)
		s.unpend(id, r)
	}
	s.deferEntry(id, r, len(meta))
}

// deferEntry queues r, the index entries of records of session id the log
// has synced (r.index names the first), to ride the next commit.
func (s *Store) deferEntry(id string, r *request, metaBytes int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return // replayed at the next Open
	}
	r.metaBytes = metaBytes
	s.deferMu.Lock()
	s.deferred = append(s.deferred, r)
	if s.pending == nil {
		s.pending = map[string][]*request{}
	}
	s.pending[id] = append(s.pending[id], r)
	s.indexQueued.Add(1)
	s.deferredN++
	s.deferredBytes += metaBytes
	full := s.deferredN >= maxDeferredEntries || s.deferredBytes >= maxDeferredBytes
	if s.deferTimer == nil && !full {
		s.deferTimer = time.AfterFunc(s.deferDelay, s.flushDeferred)
	}
	s.deferMu.Unlock()
	if full && s.flushKicked.CompareAndSwap(false, true) {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.flushKicked.Store(false)
			s.flushDeferred()
		}()
	}
}

// pendingIndex returns the chunks whose index entries wait for a commit.
func (s *Store) pendingIndex() []*pendingIndex {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	var out []*pendingIndex
	for _, r := range s.deferred {
		if r.index != nil {
			out = append(out, r.index)
		}
	}
	return out
}

// unpend forgets r, an index entry of session id whose commit has ended.
func (s *Store) unpend(id string, r *request) {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	list := s.pending[id]
	for i, p := range list {
		if p == r {
			if i == 0 {
				// Entries commit in the order queued: the first,
				// without moving the others (thousands in a commit).
				list = list[1:]
			} else {
				list = append(list[:i], list[i+1:]...)
			}
			break
		}
	}
	if len(list) == 0 {
		delete(s.pending, id)
	} else {
		s.pending[id] = list
	}
}

// pendingOf returns the index entries of session id that no commit has
// ended yet, in the order they were queued.
func (s *Store) pendingOf(id string) []pendingIndex {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	list := s.pending[id]
	if len(list) == 0 {
		return nil
	}
	out := make([]pendingIndex, 0, len(list))
	for _, r := range list {
		if !r.index.metaOnly {
			out = append(out, *r.index)
		}
	}
	return out
}

// flushIfDeferred commits the deferred writes, if there are any, so that a
// read sees every acknowledged Append's index entry. An entry may also be in
// a commit under way, taken from the queue but not committed yet: Flush
// waits for that commit too.
func (s *Store) flushIfDeferred() {
	if s.indexDone.Load() < s.indexQueued.Load() || s.hasDeferred() {
		s.Flush()
	}
}

// hasDeferred reports whether deferred writes wait for a commit.
func (s *Store) hasDeferred() bool {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	return len(s.deferred) > 0
}

// takeDeferred returns the deferred writes and forgets them. The caller
// holds commitMu and commits them.
func (s *Store) takeDeferred() []*request {
	s.deferMu.Lock()
	later := s.deferred
	s.deferred = nil
	s.deferredN, s.deferredBytes = 0, 0
	if s.deferTimer != nil {
		s.deferTimer.Stop()
		s.deferTimer = nil
	}
	s.deferMu.Unlock()
	index, other := 0, false
	for _, r := range later {
		if r.index != nil {
			index++
		} else {
			other = true
		}
	}
	// Crash tests die here: deferred writes taken, not yet durable; the
	// index entries of appends apart from the rest. store.index-entry
	// counts entries rather than commits, so a test can die at the commit
	// that takes its n-th append's entry, whichever commits (a timer's, the
	// trace's) took the earlier ones.
	if index > 0 {
		failpoint.Hit("store.commit-index")
		for range index {
			failpoint.Hit("store.index-entry")
		}
	}
	if other {
		failpoint.Hit("store.commit-deferred")
	}
	return later
}

// Flush commits the deferred writes now, if there are any, and returns once
// they are durable (or failed: their own callbacks hear of it). A caller
// about to act on what a deferred write records (undo of a finished
// session) flushes first, so that a crash cannot leave the store saying
// less than what was done.
func (s *Store) Flush() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.flushDeferred()
	}
}

// flushDeferred commits deferred writes that no other commit took along.
func (s *Store) flushDeferred() {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if later := s.takeDeferred(); len(later) > 0 {
		s.commit(later)
	}
}
