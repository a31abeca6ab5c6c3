package store

import (
	"bytes"
	"log/slog"

	"github.com/orion-agent/orion/internal/contentlog"
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
// in which case that one runs again. Passes are cheap to ask for: with no
// segment but the one being appended to there is nothing to do.
func (s *Store) reclaimSoon() {
	if len(s.log.Segments()) <= 1 {
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

// liveChunk is an index entry found in a segment being compacted.
type liveChunk struct {
	id  []byte
	seq uint64
	ref chunkRef
}

// reclaim deletes the segments no index entry points into, and compacts the
// mostly dead ones (whose segments a later pass deletes).
//
// Only segments before the one holding the last indexed position are
// considered: all their records are indexed, so an entry not in the index
// now is not coming. indexMu keeps out, while the index is read and the
// segments deleted, the writes that index a record in a commit of their own
// (Append with puts, compaction): their record may be in an old segment
// before their entry is committed.
func (s *Store) reclaim() error {
	s.indexMu.Lock()
	indexed := *s.indexed.Load()
	var candidates []contentlog.SegmentInfo
	for _, sg := range s.log.Segments() {
		if !sg.Active && sg.ID < indexed.Seg {
			candidates = append(candidates, sg)
		}
	}
	if len(candidates) == 0 {
		s.indexMu.Unlock()
		return nil
	}
	live := map[uint64]int64{}
	err := s.view(func(tx *bolt.Tx) error {
		return forEachChunkRef(tx, func(_ []byte, _ uint64, ref chunkRef) {
			live[ref.rec.Seg] += ref.rec.Size()
		})
	})
	if err != nil {
		s.indexMu.Unlock()
		return err
	}
	compact := map[uint64]bool{}
	var dead []uint64
	for _, sg := range candidates {
		switch n := live[sg.ID]; {
		case n == 0:
			dead = append(dead, sg.ID)
		case float64(n) < compactBelow*float64(sg.End):
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

// compact copies the live chunks of segs to the end of the log and points
// their index entries at the copies, unless an entry changed meanwhile (the
// chunk was replaced or dropped), in which case the copy is dead. The
// copies are flagged indexed: recovery never replays them, so a crash
// before the index is updated leaves them dead and the originals live.
func (s *Store) compact(segs map[uint64]bool) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	var chunks []liveChunk
	err := s.view(func(tx *bolt.Tx) error {
		return forEachChunkRef(tx, func(id []byte, seq uint64, ref chunkRef) {
			if segs[ref.rec.Seg] {
				chunks = append(chunks, liveChunk{id: append([]byte(nil), id...), seq: seq, ref: ref})
			}
		})
	})
	if err != nil || len(chunks) == 0 {
		return err
	}
	recs := make([][]byte, 0, len(chunks))
	s.readMu.RLock()
	for _, c := range chunks {
		rec, err := s.log.Read(c.ref.rec)
		if err != nil {
			// A damaged record stays where it is: its reads report
			// the damage, and its segment is kept.
			rec = nil
		} else {
			rec[1] |= flagIndexed
		}
		recs = append(recs, rec)
	}
	s.readMu.RUnlock()
	var keep []liveChunk
	var copies [][]byte
	for i, r := range recs {
		if r != nil {
			keep = append(keep, chunks[i])
			copies = append(copies, r)
		}
	}
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
		var delta int64
		defer func() { s.liveOnCommit(tx, delta) }()
		all := tx.Bucket(bucketChunks)
		for i, c := range keep {
			b := all.Bucket(c.id)
			if b == nil {
				continue
			}
			k := encodeSeq(c.seq)
			if !bytes.Equal(b.Get(k), c.ref.encode()) {
				continue
			}
			moved := c.ref
			moved.rec = refs[i]
			delta += moved.rec.Size() - c.ref.rec.Size()
			if err := b.Put(k, moved.encode()); err != nil {
				return err
			}
		}
		return nil
	})
}

// forEachChunkRef calls fn with every chunk's index entry.
func forEachChunkRef(tx *bolt.Tx, fn func(id []byte, seq uint64, ref chunkRef)) error {
	chunks := tx.Bucket(bucketChunks)
	return chunks.ForEachBucket(func(id []byte) error {
		return chunks.Bucket(id).ForEach(func(k, v []byte) error {
			if !isChunkKey(k) {
				return nil
			}
			if ref, ok := decodeChunkRef(v); ok {
				fn(id, decodeSeq(k), ref)
			}
			return nil
		})
	})
}
