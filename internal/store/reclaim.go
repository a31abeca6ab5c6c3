package store

import (
	"bytes"
	"log/slog"

	"github.com/orion-agent/orion/internal/failpoint"

	bolt "go.etcd.io/bbolt"
)

// compactBelow is the share of live bytes under which a segment's live
// chunks are copied to the end of the log, so that the segment can go.
// Copying a quarter of a segment to free all of it writes at most a third
// of what it frees.
const compactBelow = 0.25

// reclaimAfter asks for a reclaim pass after a write that may have dropped
// chunks, when it succeeded, and returns its error.
func (s *Store) reclaimAfter(err error) error {
	if err == nil {
		s.reclaimSoon()
	}
	return err
}

// reclaimSoon starts a reclaim pass in the background unless one is running,
// in which case that one runs again. Passes are cheap to ask for: the live
// bytes counted per segment tell, without reading the index, whether any
// segment is dead or mostly dead; only then does a pass read the index.
func (s *Store) reclaimSoon() {
	if !s.reclaimWanted() {
		return
	}
	s.reclaimAgain.Store(true)
	if !s.reclaiming.CompareAndSwap(false, true) {
		return
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		s.reclaiming.Store(false)
		return
	}
	s.reclaimDone.Add(1)
	s.mu.RUnlock()
	go func() {
		defer s.reclaimDone.Done()
		for {
			for s.reclaimAgain.Swap(false) {
				if err := s.reclaim(); err != nil {
					slog.Warn("store: reclaiming content log segments failed; retried after the next finished session", "err", err)
				}
			}
			s.reclaiming.Store(false)
			// A request that came between the last pass and now.
			if !s.reclaimAgain.Load() || !s.reclaiming.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// mostlyDead reports whether a segment of end bytes of records, live of
// them live, is worth reclaiming: no live record, or so few that copying
// them frees the segment cheaply.
func mostlyDead(live, end int64) bool {
	return live <= 0 || float64(live) < compactBelow*float64(end)
}

// rotateAfter is the share of a segment's size its records must take
// before the segment being appended to is rotated for being mostly dead:
// rotating an almost empty one would trade it for a new one for little.
const rotateAfter = 0.25

// reclaimWanted reports, from the live bytes counted per segment, whether a
// reclaim pass has anything to do.
func (s *Store) reclaimWanted() bool {
	segs := s.log.Segments()
	// A pass would stop at the first segment with a record waiting for
	// its index entry (see reclaim): no pass for what lies beyond.
	low, pending := s.oldestPending()
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	for _, sg := range segs {
		if pending && sg.ID >= low {
			return false
		}
		live := s.segLive[sg.ID]
		if sg.Active {
			if float64(sg.End) >= rotateAfter*float64(s.segSize) && mostlyDead(live, sg.End) {
				return true
			}
			continue
		}
		if mostlyDead(live, sg.End) {
			return true
		}
	}
	return false
}

// refLoc is where an index entry into the log is: a chunk (bucket the
// session id, key the seq) or a content bucket's value.
type refLoc struct {
	chunk       bool
	bucket, key []byte
}

// entry returns the bbolt bucket holding the entry at l in tx, or nil.
func (l refLoc) entry(tx *bolt.Tx) *bolt.Bucket {
	if l.chunk {
		return tx.Bucket(bucketChunks).Bucket(l.bucket)
	}
	return tx.Bucket(l.bucket)
}

// liveRef is an index entry found in a segment being compacted.
type liveRef struct {
	loc refLoc
	ref chunkRef
}

// oldestPending returns the lowest segment holding a record whose index
// entry waits for a commit, and whether there is one.
func (s *Store) oldestPending() (uint64, bool) {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	var low uint64
	found := false
	for _, list := range s.pending {
		for _, r := range list {
			if seg := r.index.ref.rec.Seg; !found || seg < low {
				low, found = seg, true
			}
		}
	}
	return low, found
}

// reclaim deletes the segments no index entry points into, compacts the
// mostly dead ones (whose segments a later pass deletes), and rotates the
// segment being appended to when it is mostly dead, so that it can go too.
//
// A segment is considered only once nothing in it can still become live:
// it is not the one appends go to, and no record in it or after it waits
// for its index entry to be committed (oldestPending: the log calls back in
// order, so when a later segment exists, every record of an earlier one
// has queued its entry). indexMu keeps out, while the index is read and the
// segments deleted, the writes that index their records in a commit of
// their own (Append with puts, the content buckets' values, compaction):
// their records may be in any segment before their entries are committed.
func (s *Store) reclaim() error {
	s.indexMu.Lock()
	segs := s.log.Segments()
	low, pending := s.oldestPending()
	live := map[uint64]int64{}
	err := s.view(func(tx *bolt.Tx) error {
		return forEachRef(tx, func(_ refLoc, ref chunkRef) {
			live[ref.rec.Seg] += ref.rec.Size()
		})
	})
	if err != nil {
		s.indexMu.Unlock()
		return err
	}
	compact := map[uint64]bool{}
	var dead []uint64
	rotate := false
	for _, sg := range segs {
		if pending && sg.ID >= low {
			break
		}
		switch {
		case sg.Active:
			rotate = float64(sg.End) >= rotateAfter*float64(s.segSize) && mostlyDead(live[sg.ID], sg.End)
		case live[sg.ID] == 0:
			dead = append(dead, sg.ID)
		case mostlyDead(live[sg.ID], sg.End):
			compact[sg.ID] = true
		}
	}
	if len(dead) > 0 {
		// Readers hold readMu from the transaction that found a ref to
		// the read of its record.
		s.readMu.Lock()
		for _, id := range dead {
			if err = s.log.Reclaim(id); err != nil {
				break
			}
		}
		s.readMu.Unlock()
	}
	if err == nil && rotate {
		// The segment appends went to is now one like the others: the
		// next pass deletes or compacts it.
		if err = s.log.Rotate(); err == nil {
			s.reclaimAgain.Store(true)
		}
	}
	s.indexMu.Unlock()
	if err != nil || len(compact) == 0 {
		return err
	}
	if err := s.compact(compact); err != nil {
		return err
	}
	// The compacted segments are dead now: the next pass deletes them.
	s.reclaimAgain.Store(true)
	return nil
}

// compact copies the live records of segs to the end of the log and points
// their index entries at the copies, unless an entry changed meanwhile (the
// chunk or value was replaced or dropped), in which case the copy is dead.
// The copies are flagged indexed: recovery never replays them, so a crash
// before the index is updated leaves them dead and the originals live.
func (s *Store) compact(segs map[uint64]bool) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	var found []liveRef
	err := s.view(func(tx *bolt.Tx) error {
		return forEachRef(tx, func(loc refLoc, ref chunkRef) {
			if segs[ref.rec.Seg] {
				loc.bucket = append([]byte(nil), loc.bucket...)
				loc.key = append([]byte(nil), loc.key...)
				found = append(found, liveRef{loc: loc, ref: ref})
			}
		})
	})
	if err != nil || len(found) == 0 {
		return err
	}
	// The records are copied a batch at a time, each batch read, appended
	// and indexed before the next is read: a mostly dead segment may still
	// hold a quarter of its 64 MiB, and reading it whole (then gathering it
	// into the log's batch) made a daemon that had streamed 64 sessions
	// grow by more than 60 MiB when they finished.
	for len(found) > 0 {
		n, size := 0, int64(0)
		for n < len(found) && (n == 0 || size+found[n].ref.rec.Size() <= compactBatchBytes) {
			size += found[n].ref.rec.Size()
			n++
		}
		if err := s.compactBatch(found[:n]); err != nil {
			return err
		}
		found = found[n:]
	}
	return nil
}

// compactBatchBytes bounds the records one compaction batch holds in
// memory.
const compactBatchBytes = 1 << 20

// compactBatch copies the records of found to the end of the log and points
// their index entries at the copies (compact).
func (s *Store) compactBatch(found []liveRef) error {
	var keep []liveRef
	var copies [][]byte
	s.readMu.RLock()
	for _, c := range found {
		rec, err := s.log.Read(c.ref.rec)
		if err != nil {
			// A damaged record stays where it is: its reads report
			// the damage, and its segment is kept.
			continue
		}
		rec[1] |= flagIndexed
		keep = append(keep, c)
		copies = append(copies, rec)
	}
	s.readMu.RUnlock()
	if len(copies) == 0 {
		return nil
	}
	refs, err := s.log.Append(copies, nil)
	if err != nil {
		return err
	}
	failpoint.Hit("store.compact-copied")
	if s.afterCompactCopy != nil {
		s.afterCompactCopy()
	}
	return s.write(func(tx *bolt.Tx) error {
		for i, c := range keep {
			b := c.loc.entry(tx)
			if b == nil || !bytes.Equal(b.Get(c.loc.key), c.ref.encode()) {
				continue
			}
			moved := c.ref
			moved.rec = refs[i]
			if err := b.Put(c.loc.key, moved.encode()); err != nil {
				return err
			}
			s.liveOnCommit(tx, c.ref.rec.Seg, -c.ref.rec.Size())
			s.liveOnCommit(tx, moved.rec.Seg, moved.rec.Size())
		}
		return nil
	})
}

// forEachRef calls fn with every index entry into the log: the chunks' and
// the content buckets' values'. The slices of loc are valid only inside tx.
func forEachRef(tx *bolt.Tx, fn func(loc refLoc, ref chunkRef)) error {
	chunks := tx.Bucket(bucketChunks)
	if err := chunks.ForEachBucket(func(id []byte) error {
		return chunks.Bucket(id).ForEach(func(k, v []byte) error {
			if !isChunkKey(k) {
				return nil
			}
			if ref, ok := decodeChunkRef(v); ok {
				fn(refLoc{chunk: true, bucket: id, key: k}, ref)
			}
			return nil
		})
	}); err != nil {
		return err
	}
	for name := range contentBuckets {
		b := tx.Bucket([]byte(name))
		if b == nil {
			continue
		}
		if err := b.ForEach(func(k, v []byte) error {
			if ref, ok := decodeChunkRef(v); ok {
				fn(refLoc{bucket: []byte(name), key: k}, ref)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
