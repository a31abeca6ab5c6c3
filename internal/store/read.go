package store

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Reads copy what they need out of short read transactions and call back
// into the caller (fn, w) only after the transaction has ended. A read
// transaction held open while a client drains a socket would pin every page
// freed since it began, so the file would grow, and would block the
// committer whenever bbolt has to remap the file.
const (
	copyRoundBytes    = 64 << 10 // bytes CopyRange copies per transaction
	forEachRoundBytes = 1 << 20  // metadata bytes ForEachMeta copies per transaction
	forEachRoundIDs   = 256      // sessions ForEachMeta copies per transaction
)

// Meta returns a copy of the metadata of session id, or ErrNotFound.
func (s *Store) Meta(id string) ([]byte, error) {
	s.flushIfDeferred()
	var meta []byte
	err := s.view(func(tx *bolt.Tx) error {
		v, ok := sessionMeta(tx, []byte(id))
		if !ok {
			return notFound(id)
		}
		meta = append([]byte{}, v...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return meta, nil
}

// ForEachMeta calls fn with every session's id and metadata in id order,
// until fn returns an error, which ForEachMeta then returns. meta is valid
// only until fn returns.
//
// fn runs outside any transaction, so it may call any method of s, Delete
// included. The walk is not a snapshot: a session created or deleted during
// it may or may not be seen, and none is seen twice.
func (s *Store) ForEachMeta(fn func(id string, meta []byte) error) error {
	s.flushIfDeferred()
	var (
		after []byte // last id handed to fn
		ids   []string
		ends  []int // ends[i] is where ids[i]'s metadata ends in arena
		arena []byte
	)
	for {
		ids, ends, arena = ids[:0], ends[:0], arena[:0]
		more := false
		err := s.view(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketSessions).Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && string(k) == string(after) {
					k, v = c.Next()
				}
			}
			for ; k != nil; k, v = c.Next() {
				if m, ok := chunkMeta(tx, k); ok {
					v = m
				}
				if len(ids) == forEachRoundIDs || (len(ids) > 0 && len(arena)+len(v) > forEachRoundBytes) {
					more = true
					break
				}
				ids = append(ids, string(k))
				arena = append(arena, v...)
				ends = append(ends, len(arena))
			}
			return nil
		})
		if err != nil {
			return err
		}
		start := 0
		for i, id := range ids {
			// The cap keeps an append by fn from overwriting the next value.
			if err := fn(id, arena[start:ends[i]:ends[i]]); err != nil {
				return err
			}
			start = ends[i]
		}
		if !more {
			return nil
		}
		after = []byte(ids[len(ids)-1])
	}
}

// Chunk returns a copy of chunk seq of session id, or ErrNotFound, or an
// error wrapping ErrDamaged if its bytes on disk are damaged.
func (s *Store) Chunk(id string, seq uint64) ([]byte, error) {
	s.flushIfDeferred()
	s.readMu.RLock()
	defer s.readMu.RUnlock()
	var ref chunkRef
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketChunks).Bucket([]byte(id))
		if b == nil {
			return notFound(id)
		}
		v := b.Get(encodeSeq(seq))
		var ok bool
		if ref, ok = decodeChunkRef(v); !ok {
			return fmt.Errorf("store: session %q chunk %d: %w", id, seq, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	chunk, err := s.readChunkRef(nil, ref)
	if err != nil {
		return nil, fmt.Errorf("store: session %q chunk %d: %w", id, seq, err)
	}
	return chunk, nil
}

// CopyRange writes bytes [off, off+n) of the session's content, the
// concatenation of its chunks in seq order, to w and returns the number of
// bytes written. n < 0 means up to the end. A range past the end is cut
// short without error, as with io.SectionReader; an unknown session is
// ErrNotFound, and a session without chunks has empty content. A chunk whose
// bytes on disk are damaged stops the copy with an error wrapping
// ErrDamaged, before any of its bytes are written.
//
// The content is copied in rounds of about 64 KiB: each round takes the
// index entries of its chunks in a short transaction and reads them from
// the log after it, and writes them to w, so memory stays bounded and a slow
// w never holds up writers. "The end" is the last chunk at the time of the
// call: chunks appended after it are not copied, while a chunk replaced
// during the copy is read as it is when its round reaches it. Finding off
// walks the index entries before it, without reading their chunks.
func (s *Store) CopyRange(id string, w io.Writer, off, n int64) (int64, error) {
	if off < 0 {
		return 0, fmt.Errorf("store: session %q: negative offset %d", id, off)
	}
	tail, indexedLast, indexedLen, ok, err := s.pendingTail(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		s.Flush()
		return s.copyRange(id, w, off, n, ^uint64(0))
	}
	if len(tail) == 0 {
		return s.copyRange(id, w, off, n, ^uint64(0))
	}
	// The indexed chunks up to indexedLast, then the pending ones.
	var written int64
	if off < indexedLen {
		m := n
		if m < 0 || off+m > indexedLen {
			m = indexedLen - off
		}
		k, err := s.copyRange(id, w, off, m, indexedLast)
		written += k
		if err != nil {
			return written, err
		}
	}
	pos := indexedLen
	var buf []byte
	for _, p := range tail {
		if n >= 0 && written >= n {
			break
		}
		end := pos + int64(p.ref.len)
		if end <= off {
			pos = end
			continue
		}
		s.readMu.RLock()
		buf, err = s.readChunkRef(buf[:0], p.ref)
		s.readMu.RUnlock()
		if err != nil {
			return written, fmt.Errorf("store: session %q chunk %d: %w", id, p.seq, err)
		}
		if off > pos {
			buf = buf[off-pos:]
		}
		if n >= 0 && int64(len(buf)) > n-written {
			buf = buf[:n-written]
		}
		m, err := w.Write(buf)
		written += int64(m)
		if err == nil && m < len(buf) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return written, err
		}
		pos = end
	}
	return written, nil
}

// pendingTail returns, for a session whose last appends' index entries are
// not committed yet, those entries in seq order (the content's tail), with
// the last seq and the length of the content the index holds before them.
// ok is false when a pending entry replaces an indexed chunk, which the
// caller then reads after committing it.
func (s *Store) pendingTail(id string) (tail []pendingIndex, indexedLast uint64, indexedLen int64, ok bool, err error) {
	// An entry leaves pending only once its commit has ended: whatever
	// is not there is in the index.
	pend := s.pendingOf(id)
	if len(pend) == 0 {
		return nil, 0, 0, true, nil
	}
	// The last entry queued for a seq is the one that counts.
	bySeq := map[uint64]pendingIndex{}
	for _, p := range pend {
		bySeq[p.seq] = p
	}
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketChunks).Bucket([]byte(id))
		if b != nil {
			c := b.Cursor()
			if lk := lastSeq(c); lk != nil {
				indexedLast = decodeSeq(lk)
			}
			for k, v := c.First(); k != nil && isChunkKey(k); k, v = c.Next() {
				ref, _ := decodeChunkRef(v)
				indexedLen += int64(ref.len)
			}
		}
		for seq, p := range bySeq {
			if b == nil || seq > indexedLast {
				continue
			}
			cur, found := decodeChunkRef(b.Get(encodeSeq(seq)))
			if found && cur == p.ref {
				delete(bySeq, seq) // committed since pendingOf looked
				continue
			}
			return errReplaced
		}
		// With no chunk indexed (b == nil), the pending entries are
		// the whole content: the session's first appends. (A Finish
		// or Delete that takes them into its commit and drops them
		// with the session's chunks is ordered after the reads of that
		// session by its caller.)
		return nil
	})
	if err == errReplaced {
		return nil, 0, 0, false, nil
	}
	if err != nil {
		return nil, 0, 0, false, err
	}
	for _, p := range bySeq {
		tail = append(tail, p)
	}
	slices.SortFunc(tail, func(a, b pendingIndex) int { return cmp.Compare(a.seq, b.seq) })
	return tail, indexedLast, indexedLen, true, nil
}

var errReplaced = errors.New("a pending entry replaces an indexed chunk")

// copyRange is CopyRange over the index alone, up to chunk maxSeq.
func (s *Store) copyRange(id string, w io.Writer, off, n int64, maxSeq uint64) (int64, error) {
	key := []byte(id)
	var (
		written int64
		buf     = make([]byte, 0, roundCap(n))
		spans   []span
		refs    []chunkRef
		seqs    []uint64
		next    uint64 // seq of the next chunk to copy
		last    uint64 // seq of the last chunk to copy
		skip    int64  // bytes of the first chunk to copy that lie before off
		done    bool
	)
	for first := true; !done; first = false {
		refs, seqs = refs[:0], seqs[:0]
		roundSkip := skip
		// Held from finding the refs to reading them: see reclaim.
		s.readMu.RLock()
		err := s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketChunks).Bucket(key)
			if b == nil {
				if !first {
					return fmt.Errorf("store: session %q deleted during copy: %w", id, ErrNotFound)
				}
				if _, ok := lookup(tx.Bucket(bucketSessions), key); !ok {
					return notFound(id)
				}
				done = true
				return nil
			}
			c := b.Cursor()
			var k, v []byte
			if first {
				lk := lastSeq(c)
				if lk == nil || n == 0 {
					done = true
					return nil
				}
				last = min(decodeSeq(lk), maxSeq)
				k, v, roundSkip = seekOffset(c, off)
			} else {
				k, v = c.Seek(encodeSeq(next))
			}
			var size int64
			for ; ; k, v = c.Next() {
				if k == nil || !isChunkKey(k) || decodeSeq(k) > last {
					done = true
					return nil
				}
				if size >= copyRoundBytes {
					next = decodeSeq(k)
					return nil
				}
				ref, ok := decodeChunkRef(v)
				if !ok {
					return fmt.Errorf("store: session %q chunk %d: index entry of %d bytes: %w", id, decodeSeq(k), len(v), ErrDamaged)
				}
				refs = append(refs, ref)
				seqs = append(seqs, decodeSeq(k))
				size += int64(ref.len)
				if n >= 0 && written+size-roundSkip >= n {
					done = true
					return nil
				}
			}
		})
		if err != nil {
			s.readMu.RUnlock()
			return written, err
		}
		skip = 0
		// The chunks are read in the round's order, each record whole
		// into buf and its chunk written from where it lies there (a
		// chunk of a MiB is not moved twice to close the gaps); the
		// round's first may start before off.
		buf, spans = buf[:0], spans[:0]
		for i, ref := range refs {
			var at int
			buf, at, err = s.log.ReadRecord(buf, ref.rec)
			if err == nil && uint64(ref.at)+uint64(ref.len) > uint64(len(buf)-at) {
				err = fmt.Errorf("store: index entry past its record: %w", ErrDamaged)
			}
			if err != nil {
				err = fmt.Errorf("store: session %q chunk %d: %w", id, seqs[i], err)
				break
			}
			sp := span{at + int(ref.at), at + int(ref.at) + int(ref.len)}
			if i == 0 && roundSkip > 0 {
				sp.start += int(roundSkip)
			}
			spans = append(spans, sp)
		}
		s.readMu.RUnlock()
		if err != nil {
			return written, err
		}
		for _, sp := range spans {
			b := buf[sp.start:sp.end]
			if n >= 0 && int64(len(b)) > n-written {
				b = b[:n-written]
			}
			if len(b) == 0 {
				continue
			}
			m, err := w.Write(b)
			written += int64(m)
			if err == nil && m < len(b) {
				err = io.ErrShortWrite
			}
			if err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// span is where a chunk lies in copyRange's buffer.
type span struct{ start, end int }

// roundCap is the capacity CopyRange's buffer starts with: at most n bytes
// are copied, and a round ends at the first chunk boundary at or past
// copyRoundBytes. A large chunk still grows it.
func roundCap(n int64) int {
	if c := copyRoundBytes + 4<<10; n < 0 || n > int64(c) {
		return c
	}
	return int(n)
}

// seekOffset positions c on the chunk holding byte off of the content and
// returns it with the number of its bytes before off. It returns a nil key
// if the content is no longer than off.
func seekOffset(c *bolt.Cursor, off int64) (k, v []byte, skip int64) {
	var pos int64
	for k, v = c.First(); k != nil && isChunkKey(k); k, v = c.Next() {
		ref, _ := decodeChunkRef(v)
		if pos+int64(ref.len) > off {
			return k, v, off - pos
		}
		pos += int64(ref.len)
	}
	return nil, nil, 0
}

// lastSeq moves c to the last chunk of its bucket, past the metadata kept
// after the chunks, and returns its key, or nil if there is none.
func lastSeq(c *bolt.Cursor) []byte {
	k, _ := c.Last()
	for k != nil && !isChunkKey(k) {
		k, _ = c.Prev()
	}
	return k
}
