package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/orion-agent/orion/internal/contentlog"

	bolt "go.etcd.io/bbolt"
)

// ErrDamaged reports content whose bytes on disk no longer match their
// checksums. It is never served as data.
var ErrDamaged = contentlog.ErrDamaged

// A chunk record in the content log is
//
//	kind   uint8   recChunk
//	flags  uint8   flagIndexed when a commit of its own indexed it
//	idLen  uint16
//	id     [idLen]byte
//	seq    uint64
//	metaLen uint32
//	meta   [metaLen]byte
//	chunk  (the rest)
//
// It carries the session's metadata so that recovery can redo an Append
// whose index entry had not been committed: the record alone is the
// Append.
const (
	recChunk = 1

	// flagIndexed marks a record indexed by the same bbolt commit that made
	// its Append (or a migration, or a compaction) durable: recovery never
	// replays it, since that commit either happened, or the write it
	// belongs to was never acknowledged.
	flagIndexed = 1

	recFixed = 1 + 1 + 2 + 8 + 4
)

// A metadata record in the content log is
//
//	kind   uint8   recMeta
//	flags  uint8   0
//	idLen  uint16
//	id     [idLen]byte
//	meta   (the rest)
//
// It is a LogMeta: recovery replays it as PutMeta, in log order with the
// chunks and values around it.
const recMeta = 3

func encodeMetaRecord(id string, meta []byte) []byte {
	rec := make([]byte, 0, 4+len(id)+len(meta))
	rec = append(rec, recMeta, 0)
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(id)))
	rec = append(rec, id...)
	return append(rec, meta...)
}

func decodeMetaRecord(rec []byte) (id, meta []byte, ok bool) {
	if len(rec) < 4 || rec[0] != recMeta {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(rec[2:]))
	if len(rec) < 4+n {
		return nil, nil, false
	}
	return rec[4 : 4+n], rec[4+n:], true
}

// encodeChunkRecord returns the record of an Append, and where its chunk
// starts in it.
func encodeChunkRecord(id string, seq uint64, meta, chunk []byte, flags byte) ([]byte, int) {
	head := encodeChunkHead(id, seq, meta, flags, len(chunk))
	return append(head, chunk...), len(head)
}

// encodeChunkHead returns the record of an Append up to its chunk, with
// room for capChunk more bytes: the record is the head, then the chunk.
func encodeChunkHead(id string, seq uint64, meta []byte, flags byte, capChunk int) []byte {
	return appendChunkHead(make([]byte, 0, recFixed+len(id)+len(meta)+capChunk), id, seq, meta, flags)
}

// appendChunkHead appends the record of an Append up to its chunk to rec.
func appendChunkHead(rec []byte, id string, seq uint64, meta []byte, flags byte) []byte {
	rec = append(rec, recChunk, flags)
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(id)))
	rec = append(rec, id...)
	rec = binary.BigEndian.AppendUint64(rec, seq)
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(meta)))
	return append(rec, meta...)
}

// chunkRecord is a decoded chunk record; its slices point into the record.
type chunkRecord struct {
	flags   byte
	id      []byte
	seq     uint64
	meta    []byte
	chunkAt int // offset of the chunk in the record
	chunk   []byte
}

var errBadRecord = errors.New("not a chunk record")

func decodeChunkRecord(rec []byte) (chunkRecord, error) {
	var r chunkRecord
	if len(rec) < recFixed-8-4 || rec[0] != recChunk {
		return r, errBadRecord
	}
	r.flags = rec[1]
	n := int(binary.BigEndian.Uint16(rec[2:]))
	rest := rec[4:]
	if len(rest) < n+8+4 {
		return r, errBadRecord
	}
	r.id, rest = rest[:n], rest[n:]
	r.seq, rest = binary.BigEndian.Uint64(rest), rest[8:]
	m := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if uint64(len(rest)) < uint64(m) {
		return r, errBadRecord
	}
	r.meta, r.chunk = rest[:m], rest[m:]
	r.chunkAt = len(rec) - len(r.chunk)
	return r, nil
}

// A chunk's index entry, the value of chunks/<id>/<seq>, is where its bytes
// are in the log: the record's ref, then the chunk's offset and length in
// the record's payload.
const indexLen = 8 + 8 + 4 + 4 + 4

type chunkRef struct {
	rec     contentlog.Ref
	at, len uint32 // the chunk's place in the record's payload
}

func (c chunkRef) encode() []byte {
	return c.appendTo(make([]byte, 0, indexLen))
}

// appendTo appends c's encoding to b.
func (c chunkRef) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, c.rec.Seg)
	b = binary.BigEndian.AppendUint64(b, uint64(c.rec.Off))
	b = binary.BigEndian.AppendUint32(b, c.rec.Len)
	b = binary.BigEndian.AppendUint32(b, c.at)
	return binary.BigEndian.AppendUint32(b, c.len)
}

func decodeChunkRef(v []byte) (chunkRef, bool) {
	if len(v) != indexLen {
		return chunkRef{}, false
	}
	return chunkRef{
		rec: contentlog.Ref{
			Seg: binary.BigEndian.Uint64(v),
			Off: int64(binary.BigEndian.Uint64(v[8:])),
			Len: binary.BigEndian.Uint32(v[16:]),
		},
		at:  binary.BigEndian.Uint32(v[20:]),
		len: binary.BigEndian.Uint32(v[24:]),
	}, true
}

// readChunkRef reads the chunk c points to from the log, appending it to
// buf.
func (s *Store) readChunkRef(buf []byte, c chunkRef) ([]byte, error) {
	n := len(buf)
	buf, err := s.log.ReadAppend(buf, c.rec)
	if err != nil {
		return buf[:n], err
	}
	if uint64(c.at)+uint64(c.len) > uint64(len(buf)-n) {
		return buf[:n], fmt.Errorf("store: index entry past its record: %w", ErrDamaged)
	}
	copy(buf[n:], buf[n+int(c.at):n+int(c.at+c.len)])
	return buf[:n+int(c.len)], nil
}

// encodePos and decodePos store the log position up to which every record is
// indexed (meta/logpos).
func encodePos(p contentlog.Pos) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), p.Seg)
	return binary.BigEndian.AppendUint64(b, uint64(p.Off))
}

func decodePos(v []byte) contentlog.Pos {
	if len(v) != 16 {
		return contentlog.Pos{}
	}
	return contentlog.Pos{Seg: binary.BigEndian.Uint64(v), Off: int64(binary.BigEndian.Uint64(v[8:]))}
}

// putIndex stores the index entry of a chunk and the session's metadata, as
// Append does, in tx. The record of a chunk it replaces stops counting as
// live once tx commits.
func (s *Store) putIndex(tx *bolt.Tx, id []byte, seq uint64, c chunkRef, meta []byte) error {
	return s.putIndexIn(tx, nil, id, seq, c, meta)
}

// putIndexIn is putIndex sharing it with the other entries of tx (nil:
// none).
func (s *Store) putIndexIn(tx *bolt.Tx, it *indexTx, id []byte, seq uint64, c chunkRef, meta []byte) error {
	root := tx.Bucket(bucketChunks)
	// Bucket first: CreateBucketIfNotExists copies the name each time,
	// and the session's bucket is there for every chunk but its first.
	chunks := root.Bucket(id)
	if chunks == nil {
		var err error
		if chunks, err = root.CreateBucket(id); err != nil {
			return fmt.Errorf("store: session %q: %w", id, err)
		}
	}
	chunks.FillPercent = appendFillPercent
	key := it.seqKey(seq)
	if old, ok := decodeChunkRef(it.get(chunks, key)); ok {
		s.liveOnCommit(tx, old.rec.Seg, -old.rec.Size())
	}
	if err := chunks.Put(key, it.value(c)); err != nil {
		return fmt.Errorf("store: session %q chunk %d: %w", id, seq, err)
	}
	sessions := tx.Bucket(bucketSessions)
	if len(meta) == 0 {
		// The metadata stays as it was (see Append); a session that had
		// none is listed all the same.
		if it.listed(id) {
			return nil
		}
		if _, ok := lookup(sessions, id); ok {
			it.list(id)
			return nil
		}
		return sessions.Put(id, []byte{})
	}
	// The metadata goes next to the chunk (see the package comment); the
	// sessions bucket is written only to list a session that had no
	// PutMeta yet.
	if err := chunks.Put(keyChunkMeta, meta); err != nil {
		return fmt.Errorf("store: session %q: %w", id, err)
	}
	if _, ok := lookup(sessions, id); ok {
		return nil
	}
	return sessions.Put(id, meta)
}

// indexTx is what the index entries written in one transaction share, so
// that each costs no allocation of its own beyond bbolt's Put: where
// meta/logpos goes at the end (one write per commit, not a read and a
// write per entry), the values' memory, a cursor on the session's chunks
// and the last session found listed. A nil *indexTx shares nothing.
type indexTx struct {
	logPos contentlog.Pos
	arena  []byte
	// cursors are on the chunks of the sessions written so far, by
	// bucket; listedIDs the sessions found in the sessions bucket. Both
	// are kept, emptied, from one transaction to the next (reset).
	cursors   map[*bolt.Bucket]*bolt.Cursor
	listedIDs map[string]bool
}

// reset readies it for a new transaction: what it found and wrote in the
// last one is dropped, the room of its maps kept.
func (it *indexTx) reset() {
	it.logPos, it.arena = contentlog.Pos{}, nil
	it.forget()
}

// indexedTo notes that the records before p are indexed in this
// transaction: finish records it.
func (it *indexTx) indexedTo(p contentlog.Pos) {
	if it.logPos.Less(p) {
		it.logPos = p
	}
}

// forget drops what the entries found in the transaction so far (the
// cursor, the session found listed), but not what they wrote: a write
// other than an entry may have changed it.
func (it *indexTx) forget() {
	clear(it.cursors)
	clear(it.listedIDs)
}

// finish records meta/logpos in tx, where the entries moved it.
func (it *indexTx) finish(tx *bolt.Tx) error {
	if it.logPos == (contentlog.Pos{}) {
		return nil
	}
	return setLogPos(tx, it.logPos)
}

// get is chunks.Get(key), by a cursor kept for the bucket's next get.
func (it *indexTx) get(chunks *bolt.Bucket, key []byte) []byte {
	if it == nil {
		return chunks.Get(key)
	}
	c := it.cursors[chunks]
	if c == nil {
		c = chunks.Cursor()
		if it.cursors == nil {
			it.cursors = make(map[*bolt.Bucket]*bolt.Cursor)
		}
		it.cursors[chunks] = c
	}
	// A cursor's Seek sets it anew, whatever was written since.
	k, v := c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// value is c's encoding, in memory that lasts as long as the transaction
// (bbolt keeps a Put's value until then): a slice of a block shared by the
// transaction's entries.
func (it *indexTx) value(c chunkRef) []byte {
	if it == nil {
		return c.encode()
	}
	it.room(indexLen)
	n := len(it.arena)
	it.arena = c.appendTo(it.arena)
	return it.arena[n:len(it.arena):len(it.arena)]
}

// seqKey is encodeSeq(seq), in the transaction's block (value).
func (it *indexTx) seqKey(seq uint64) []byte {
	if it == nil {
		return encodeSeq(seq)
	}
	it.room(8)
	n := len(it.arena)
	it.arena = binary.BigEndian.AppendUint64(it.arena, seq)
	return it.arena[n:len(it.arena):len(it.arena)]
}

// room makes room for n more bytes in the transaction's block.
func (it *indexTx) room(n int) {
	if cap(it.arena)-len(it.arena) < n {
		it.arena = make([]byte, 0, 64*(indexLen+8))
	}
}

// listed reports whether session id was found listed in this transaction.
func (it *indexTx) listed(id []byte) bool {
	return it != nil && it.listedIDs[string(id)]
}

// list notes that session id is listed.
func (it *indexTx) list(id []byte) {
	if it == nil {
		return
	}
	if it.listedIDs == nil {
		it.listedIDs = make(map[string]bool)
	}
	it.listedIDs[string(id)] = true
}

// setLogPos records in tx that every record before p is indexed, unless a
// later position is recorded already.
func setLogPos(tx *bolt.Tx, p contentlog.Pos) error {
	meta := tx.Bucket(bucketMeta)
	if cur := decodePos(meta.Get(keyLogPos)); !cur.Less(p) {
		return nil
	}
	return meta.Put(keyLogPos, encodePos(p))
}

// replay indexes the records the log holds past the last indexed position:
// Appends acknowledged after their record was synced, whose index entries
// rode a bbolt commit that never happened. Records are replayed in log
// order, the order their entries would have been committed in. A damaged
// record is reported and skipped: which session it belonged to cannot be
// trusted.
func (s *Store) replay() error {
	var (
		from    contentlog.Pos
		entries []replayed
	)
	if err := s.db.View(func(tx *bolt.Tx) error {
		from = decodePos(tx.Bucket(bucketMeta).Get(keyLogPos))
		return nil
	}); err != nil {
		return err
	}
	if logEnd := s.log.End(); logEnd.Seg < from.Seg && from.Off == 0 {
		// The last segment was given up after a write error (fence):
		// what follows its acknowledged records was never
		// acknowledged, and appends must not go after it, where replay
		// would not look.
		slog.Info("store: the last segment of the content log was given up after a write error; new content goes to a new segment",
			"segment", logEnd.Seg)
		s.log.StartNewSegment()
	} else if logEnd.Less(from) {
		// The log ends before records the index points to: not a torn
		// write (those are never indexed) but damage in the middle of
		// the last segment. Appends must not overwrite what follows it.
		slog.Error("store: the content log ends before the last indexed record: it is damaged; new content goes to a new segment",
			"log_end_segment", logEnd.Seg, "log_end_offset", logEnd.Off, "indexed_segment", from.Seg, "indexed_offset", from.Off)
		s.log.StartNewSegment()
	}
	end := from
	damaged := false
	err := s.log.Scan(from, func(ref contentlog.Ref, payload []byte, err error) error {
		end = contentlog.Pos{Seg: ref.Seg, Off: ref.End()}
		if err != nil {
			slog.Error("store: a record of the content log is damaged; an append it held is lost", "err", err)
			damaged = true
			return nil
		}
		if len(payload) > 0 && payload[0] == recValue {
			if len(payload) < 2 || payload[1]&flagIndexed != 0 {
				return nil // indexed by the commit that wrote it, or dead
			}
			// A value of an Append's batch, indexed with its chunk.
			bucket, key, at, ok := decodeValueRecord(payload)
			if !ok || !contentBuckets[bucket] {
				slog.Error("store: the content log holds a value record this build cannot read; skipped", "segment", ref.Seg, "offset", ref.Off)
				return nil
			}
			entries = append(entries, replayed{bucket: bucket, id: string(key),
				ref: chunkRef{rec: ref, at: uint32(at), len: uint32(len(payload) - at)}})
			return nil
		}
		if len(payload) > 0 && payload[0] == recMeta {
			id, meta, ok := decodeMetaRecord(payload)
			if !ok {
				slog.Error("store: the content log holds a metadata record this build cannot read; skipped", "segment", ref.Seg, "offset", ref.Off)
				return nil
			}
			entries = append(entries, replayed{id: string(id), meta: append([]byte(nil), meta...), metaOnly: true})
			return nil
		}
		r, err := decodeChunkRecord(payload)
		if err != nil {
			slog.Error("store: the content log holds a record this build cannot read; skipped", "segment", ref.Seg, "offset", ref.Off)
			return nil
		}
		if r.flags&flagIndexed != 0 {
			return nil
		}
		entries = append(entries, replayed{
			id: string(r.id), seq: r.seq, meta: append([]byte(nil), r.meta...),
			ref: chunkRef{rec: ref, at: uint32(r.chunkAt), len: uint32(len(r.chunk))},
		})
		return nil
	})
	if err != nil {
		return fmt.Errorf("replay content log: %w", err)
	}
	if damaged {
		if entries, err = s.stopAtGaps(entries); err != nil {
			return fmt.Errorf("replay content log: %w", err)
		}
	}
	if len(entries) == 0 && !from.Less(end) {
		return nil
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		for _, e := range entries {
			var err error
			switch {
			case e.bucket != "":
				err = s.putValues(tx, []deferredValue{{bucket: e.bucket, key: []byte(e.id), ref: e.ref}})
			case e.metaOnly:
				err = putMeta(tx, []byte(e.id), e.meta)
			default:
				err = s.putIndex(tx, []byte(e.id), e.seq, e.ref, e.meta)
			}
			if err != nil {
				return err
			}
		}
		return setLogPos(tx, end)
	})
	if err != nil {
		return fmt.Errorf("replay content log: %w", err)
	}
	if len(entries) > 0 {
		slog.Info("store: indexed appends (and their backups) found in the content log after a stop", "records", len(entries))
	}
	return nil
}

// stopAtGaps drops, for each session, the replayed entries from the first
// missing seq on: with a damaged record among them, a session's chunks after
// the one it held cannot be served (its content would have a hole), so the
// session resumes at the chunk that was lost, whose sender resends it and
// what followed. Seqs follow on from the session's last indexed chunk, or
// from its first replayed one when it has none.
func (s *Store) stopAtGaps(entries []replayed) ([]replayed, error) {
	next := map[string]uint64{}
	stopped := map[string]bool{}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, e := range entries {
			if _, ok := next[e.id]; ok || e.bucket != "" || e.metaOnly {
				continue
			}
			next[e.id] = e.seq
			if b := tx.Bucket(bucketChunks).Bucket([]byte(e.id)); b != nil {
				if lk := lastSeq(b.Cursor()); lk != nil {
					next[e.id] = decodeSeq(lk) + 1
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept := entries[:0]
	for _, e := range entries {
		switch {
		case e.bucket != "" || e.metaOnly:
			// A value or a session's metadata stands on its own: no
			// chunk after it depends on it.
			kept = append(kept, e)
		case stopped[e.id]:
		case e.seq > next[e.id]:
			stopped[e.id] = true
			slog.Error("store: a session's content has a hole where the damaged record was; it resumes there", "session", e.id, "seq", next[e.id])
		default:
			next[e.id] = max(next[e.id], e.seq+1)
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// replayed is a chunk of session id to index; when bucket is set, the value
// of key id in that content bucket; when metaOnly, a LogMeta's metadata.
type replayed struct {
	id       string
	seq      uint64
	meta     []byte
	ref      chunkRef
	bucket   string
	metaOnly bool
}

// liveOnCommit adds delta to the live bytes of the log, and of its segment
// seg, once tx commits.
func (s *Store) liveOnCommit(tx *bolt.Tx, seg uint64, delta int64) {
	if delta != 0 {
		tx.OnCommit(func() { s.addLive(seg, delta) })
	}
}

// addLive adds delta to the live bytes of the log and of segment seg.
func (s *Store) addLive(seg uint64, delta int64) {
	s.live.Add(delta)
	s.liveMu.Lock()
	if s.segLive == nil {
		s.segLive = map[uint64]int64{}
	}
	if n := s.segLive[seg] + delta; n != 0 {
		s.segLive[seg] = n
	} else {
		delete(s.segLive, seg)
	}
	s.liveMu.Unlock()
}

// dropChunksOnCommit counts the records of the chunks in b, which tx is
// about to delete, as dead once tx commits.
func (s *Store) dropChunksOnCommit(tx *bolt.Tx, b *bolt.Bucket) {
	bySeg := map[uint64]int64{}
	b.ForEach(func(k, v []byte) error {
		if ref, ok := decodeChunkRef(v); ok && isChunkKey(k) {
			bySeg[ref.rec.Seg] += ref.rec.Size()
		}
		return nil
	})
	for seg, n := range bySeg {
		s.liveOnCommit(tx, seg, -n)
	}
}

// countLive sets the live bytes of the log, and of each segment, from the
// index.
func (s *Store) countLive() error {
	bySeg := map[uint64]int64{}
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachRef(tx, func(_ refLoc, ref chunkRef) {
			n += ref.rec.Size()
			bySeg[ref.rec.Seg] += ref.rec.Size()
		})
	})
	s.live.Store(n)
	s.liveMu.Lock()
	s.segLive = bySeg
	s.liveMu.Unlock()
	return err
}
