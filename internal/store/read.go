package store

import (
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

// Chunk returns a copy of chunk seq of session id, or ErrNotFound.
func (s *Store) Chunk(id string, seq uint64) ([]byte, error) {
	var chunk []byte
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketChunks).Bucket([]byte(id))
		if b == nil {
			return notFound(id)
		}
		var ok bool
		chunk, ok = readChunk(b.Cursor(), seq)
		if !ok {
			return fmt.Errorf("store: session %q chunk %d: %w", id, seq, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return chunk, nil
}

// readChunk returns a copy of chunk seq, stored whole or as parts, and
// whether there is one.
func readChunk(c *bolt.Cursor, seq uint64) ([]byte, bool) {
	k, v := c.Seek(encodeSeq(seq))
	if k == nil || !isChunkKey(k) || decodeSeq(k) != seq {
		return nil, false
	}
	if len(k) == seqLen {
		return append([]byte{}, v...), true
	}
	var chunk []byte
	for ; len(k) == partKeyLen && decodeSeq(k) == seq; k, v = c.Next() {
		chunk = append(chunk, v...)
	}
	return chunk, true
}

// CopyRange writes bytes [off, off+n) of the session's content, the
// concatenation of its chunks in seq order, to w and returns the number of
// bytes written. n < 0 means up to the end. A range past the end is cut
// short without error, as with io.SectionReader; an unknown session is
// ErrNotFound, and a session without chunks has empty content.
//
// The content is copied out in rounds of about 64 KiB, each in its own
// short transaction, and written to w between them, so memory stays bounded
// and a slow w never holds up writers. "The end" is the last chunk at the
// time of the call: chunks appended after it are not copied, while a chunk
// replaced during the copy is read as it is when its round reaches it.
// Finding off walks the chunks before it, without copying them.
func (s *Store) CopyRange(id string, w io.Writer, off, n int64) (int64, error) {
	if off < 0 {
		return 0, fmt.Errorf("store: session %q: negative offset %d", id, off)
	}
	key := []byte(id)
	var (
		written int64
		buf     = make([]byte, 0, roundCap(n))
		next    uint64 // seq of the next chunk to copy
		cur     uint64 // seq of the chunk being copied
		last    uint64 // seq of the last chunk to copy
		skip    int64  // bytes of the first chunk or part to copy that lie before off
		done    bool
	)
	for first := true; !done; first = false {
		buf = buf[:0]
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
				last = decodeSeq(lk)
				k, v, skip = seekOffset(c, off)
			} else {
				k, v = c.Seek(encodeSeq(next))
			}
			// A round ends between chunks, never between the parts of
			// one, so that a chunk replaced during the copy is read
			// either as it was or as it is.
			for ; ; k, v = c.Next() {
				if k == nil || !isChunkKey(k) || decodeSeq(k) > last {
					done = true
					return nil
				}
				if seq := decodeSeq(k); len(buf) >= copyRoundBytes && seq != cur {
					next = seq
					return nil
				}
				cur = decodeSeq(k)
				data := v[skip:]
				skip = 0
				if rest := n - written - int64(len(buf)); n >= 0 && int64(len(data)) >= rest {
					buf = append(buf, data[:rest]...)
					done = true
					return nil
				}
				if len(buf)+len(data) > cap(buf) {
					// The parts of a large chunk: doubling allocates
					// less on the way than append's growth by a quarter.
					buf = slices.Grow(buf, max(len(data), cap(buf)))
				}
				buf = append(buf, data...)
			}
		})
		if err != nil {
			return written, err
		}
		if len(buf) > 0 {
			m, err := w.Write(buf)
			written += int64(m)
			if err == nil && m < len(buf) {
				err = io.ErrShortWrite
			}
			if err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// roundCap is the capacity CopyRange's buffer starts with: at most n bytes
// are copied, and a round ends at the first chunk boundary at or past
// copyRoundBytes, so with chunks stored whole a round never holds more.
// Grown by append instead, from nothing, the buffer allocated twice what it
// came to hold (278 KB to copy 128 KiB of 1 KiB chunks), garbage that 200
// finalizes at once multiply. A chunk stored as parts still grows it.
func roundCap(n int64) int {
	if c := copyRoundBytes + partSize; n < 0 || n > int64(c) {
		return c
	}
	return int(n)
}

// seekOffset positions c on the chunk or part holding byte off of the
// content and returns it with the number of its bytes before off. It
// returns a nil key if the content is no longer than off.
func seekOffset(c *bolt.Cursor, off int64) (k, v []byte, skip int64) {
	var pos int64
	for k, v = c.First(); k != nil && isChunkKey(k); k, v = c.Next() {
		if pos+int64(len(v)) > off {
			return k, v, off - pos
		}
		pos += int64(len(v))
	}
	return nil, nil, 0
}

// lastSeq moves c to the last chunk or part of its bucket, past the
// metadata kept after the chunks, and returns its key, or nil if there is
// none.
func lastSeq(c *bolt.Cursor) []byte {
	k, _ := c.Last()
	for k != nil && !isChunkKey(k) {
		k, _ = c.Prev()
	}
	return k
}
