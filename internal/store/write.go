package store

import (
	"fmt"

	"github.com/orion-agent/orion/internal/contentlog"

	bolt "go.etcd.io/bbolt"
)

// appendFillPercent packs chunk pages full. Chunks arrive in key order, so
// the default of one half leaves every page that splits half empty and never
// fills it later: measured with 200-byte chunks, 87% of leaf space used
// instead of 50%. (Chunks near 1 KiB fill pages the same either way: bbolt
// keeps at least two keys per page.)
const appendFillPercent = 1.0

// PutMeta stores meta as the metadata of session id, replacing any previous
// value, and the keys and values of puts (as PutKVs would) in the same
// transaction, and returns once it is durable. It shares commits with
// concurrent writes.
func (s *Store) PutMeta(id string, meta []byte, puts ...Put) error {
	if err := validate(id, meta); err != nil {
		return err
	}
	if err := checkPuts(puts); err != nil {
		return err
	}
	key := []byte(id)
	return s.writePuts(nil, puts, func(tx *bolt.Tx, _ []contentlog.Ref) error {
		return putMeta(tx, key, meta)
	})
}

// putMeta stores meta as the metadata of session key in tx.
func putMeta(tx *bolt.Tx, key, meta []byte) error {
	// The metadata of the last Append would supersede meta.
	if chunks := tx.Bucket(bucketChunks).Bucket(key); chunks != nil {
		if err := chunks.Delete(keyChunkMeta); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketSessions).Put(key, meta)
}

// isClosed reports whether Close has begun: a write started after it is
// refused before it reaches the log.
func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// LogMeta is PutMeta through the content log, as Append writes chunks:
// meta, and the values of puts, are records of one batch of the log, durable
// once it is synced (shared with concurrent writers), and their index
// entries ride a later bbolt commit, or are replayed from the log at the
// next Open. It returns once the batch is durable. When a put is to a bucket
// other than the content buckets, it is PutMeta.
func (s *Store) LogMeta(id string, meta []byte, puts ...Put) error {
	if !contentOnly(puts) {
		return s.PutMeta(id, meta, puts...)
	}
	if err := validate(id, meta); err != nil {
		return err
	}
	if err := checkPuts(puts); err != nil {
		return err
	}
	if s.isClosed() {
		return ErrClosed
	}
	if err := s.fenceFirst(); err != nil {
		return fmt.Errorf("store: session %q metadata: %w", id, err)
	}
	r := encodeMetaRecord(id, meta)
	// The entry's meta is the record's own tail, a copy already.
	meta = r[len(r)-len(meta) : len(r) : len(r)]
	rec := [][][]byte{{r}}
	rec, vals := appendValueRecords(rec, puts)
	_, err := s.log.AppendParts(rec, func(refs []contentlog.Ref) {
		// The metadata record counts as no live content: no index entry
		// points to it, and until its entry is committed the segment is
		// kept by being pending (see oldestPending).
		for i := range vals {
			vals[i].ref.rec = refs[1+i]
			s.addLive(refs[1+i].Seg, refs[1+i].Size())
		}
		last := refs[len(refs)-1]
		s.deferMeta(id, refs[0], meta, vals, contentlog.Pos{Seg: last.Seg, Off: last.End()})
	})
	if err != nil {
		s.fenceAfter(err)
		return fmt.Errorf("store: session %q metadata: %w", id, err)
	}
	return nil
}

// appendValueRecords appends to recs a record for each value of puts, to be
// replayed (no flagIndexed), and returns them with what their index entries
// need but the records' refs.
func appendValueRecords(recs [][][]byte, puts []Put) ([][][]byte, []deferredValue) {
	var vals []deferredValue
	for _, p := range puts {
		for _, kv := range p.KVs {
			r, at := encodeValueRecordFlags(p.Bucket, kv.Key, kv.Value, 0)
			recs = append(recs, [][]byte{r})
			vals = append(vals, deferredValue{bucket: p.Bucket, key: append([]byte(nil), kv.Key...),
				ref: chunkRef{at: uint32(at), len: uint32(len(kv.Value))}})
		}
	}
	return recs, vals
}

// Append stores chunk as number seq of session id and replaces the session's
// metadata with meta, and returns once both are durable. Concurrent calls
// share syncs.
//
// The chunk and meta are durable once their record is synced to the content
// log, and its index entry rides a later bbolt commit (see the package
// comment). The keys and values of puts are stored as PutKVs would store
// them, in the same way: when every put is to a content bucket, each value
// is a record of the same batch of the log, synced with the chunk's and
// indexed with it by that later commit (or replayed with it at the next
// Open), so a session written in one request journals its content, its
// metadata and its backup with one sync. Puts to other buckets are stored
// in a bbolt commit that indexes the chunk too, and Append returns after
// that commit.
//
// An empty (or nil) meta leaves the session's metadata as it was: the
// chunk's record carries none, and recovery indexes the chunk alone (a
// session that had none is listed with empty metadata).
//
// Appending a seq that exists replaces that chunk, so retrying an Append
// whose outcome is unknown is safe. chunk and meta must not be modified until
// Append returns.
func (s *Store) Append(id string, seq uint64, chunk, meta []byte, puts ...Put) error {
	if err := validate(id, meta); err != nil {
		return err
	}
	if len(chunk) > maxChunk {
		return fmt.Errorf("store: chunk is %d bytes, limit is %d", len(chunk), maxChunk)
	}
	if err := checkPuts(puts); err != nil {
		return err
	}
	if s.isClosed() {
		return ErrClosed
	}
	var flags byte
	if len(puts) > 0 && !contentOnly(puts) {
		flags = flagIndexed
	}
	// The chunk is written from where it is, after the record's head.
	head := encodeChunkHead(id, seq, meta, flags, 0)
	ref := chunkRef{at: uint32(len(head)), len: uint32(len(chunk))}
	if flags == flagIndexed {
		// Copies for the callback to capture: captured, ref and meta
		// themselves would go to the heap on every append.
		rec, ref, meta := [][][]byte{{head, chunk}}, ref, meta
		// The chunk and the values of content buckets in one batch of
		// the log, then one commit indexes them all.
		key := []byte(id)
		err := s.writePuts(rec, puts, func(tx *bolt.Tx, refs []contentlog.Ref) error {
			ref.rec = refs[0]
			s.liveOnCommit(tx, ref.rec.Seg, ref.rec.Size())
			return s.putIndex(tx, key, seq, ref, meta)
		})
		if err != nil {
			return fmt.Errorf("store: session %q chunk %d: %w", id, seq, err)
		}
		return nil
	}
	a, err := s.enqueueAppend(id, seq, head, chunk, meta, nil, puts)
	if err != nil {
		return err
	}
	return a.Wait()
}

// EnqueueAppend is Append in two steps: it puts the chunk's record in the
// content log's queue and returns, and Wait on what it returns waits for it
// to be durable and returns Append's outcome. Chunks enqueued later are
// written after it, in the same sync when they come before it is written:
// a caller that enqueues a session's chunks in order (under the session's
// lock) and waits without the lock keeps them in order and lets the
// session's next chunk share this one's sync. The caller must call Wait,
// once, and soon (contentlog.Log.Enqueue).
//
// If after is not nil (the same session's previous chunk, still being
// written), this chunk is written only if after's was: when after fails,
// so does this, unwritten, and recovery never finds a chunk without the
// ones before it.
//
// puts must be to content buckets only. chunk and meta must not be
// modified until Wait returns.
func (s *Store) EnqueueAppend(id string, seq uint64, chunk, meta []byte, after *Appending, puts ...Put) (*Appending, error) {
	if err := validate(id, meta); err != nil {
		return nil, err
	}
	if len(chunk) > maxChunk {
		return nil, fmt.Errorf("store: chunk is %d bytes, limit is %d", len(chunk), maxChunk)
	}
	if err := checkPuts(puts); err != nil {
		return nil, err
	}
	if !contentOnly(puts) {
		return nil, fmt.Errorf("store: session %q chunk %d: a queued append stores values of content buckets only", id, seq)
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	return s.enqueueAppend(id, seq, nil, chunk, meta, after, puts)
}

// enqueueAppend queues the record of a chunk, whose head is encoded
// (nil: encoded here), and of the content buckets' values of puts.
func (s *Store) enqueueAppend(id string, seq uint64, head, chunk, meta []byte, after *Appending, puts []Put) (*Appending, error) {
	if err := s.fenceFirst(); err != nil {
		return nil, fmt.Errorf("store: session %q chunk %d: %w", id, seq, err)
	}
	a := &Appending{s: s, id: id, seq: seq}
	if head == nil {
		// In the Appending's own room when it fits: appends without
		// metadata, nearly all.
		room := a.headRoom[:0:0]
		if n := recFixed + len(id) + len(meta); n <= len(a.headRoom) {
			room = a.headRoom[:0:n]
		}
		head = appendChunkHead(room, id, seq, meta, 0)
	}
	// The entry's meta is the tail of the record's head, a copy already:
	// the caller's buffer is not held, and the chunk, a part of its own,
	// is garbage once it is written.
	if len(meta) > 0 {
		meta = head[len(head)-len(meta) : len(head) : len(head)]
	}
	a.meta, a.ref = meta, chunkRef{at: uint32(len(head)), len: uint32(len(chunk))}
	var prev *contentlog.Queued
	if after != nil {
		prev = &after.q
	}
	var err error
	if len(puts) == 0 {
		a.parts = [2][]byte{head, chunk}
		a.rec[0] = a.parts[:]
		err = s.log.EnqueueInto(&a.q, a.rec[:], (*logDurable)(a), prev)
	} else {
		// The values follow the chunk in the same batch, as records
		// that recovery replays (no flagIndexed), so they are durable
		// with it.
		rec, vals := appendValueRecords([][][]byte{{head, chunk}}, puts)
		err = s.log.EnqueueInto(&a.q, rec, durableFunc(func(refs []contentlog.Ref) {
			a.ref.rec = refs[0]
			s.addLive(a.ref.rec.Seg, a.ref.rec.Size())
			for i := range vals {
				vals[i].ref.rec = refs[1+i]
				s.addLive(refs[1+i].Seg, refs[1+i].Size())
			}
			last := refs[len(refs)-1]
			a.entry = indexEntry{pi: pendingIndex{key: a.key(head), seq: seq, ref: a.ref}, id: id, meta: meta, vals: vals,
				end: contentlog.Pos{Seg: last.Seg, Off: last.End()}}
			s.deferIndex(&a.entry)
		}), prev)
	}
	if err != nil {
		return nil, fmt.Errorf("store: session %q chunk %d: %w", id, seq, err)
	}
	return a, nil
}

// Appending is a chunk EnqueueAppend queued, and what the log calls back
// with once it is durable (contentlog.Durable): one allocation where the
// record's parts, its head, its ref, its place in the log's queue, the
// callback and its index entry took ten.
type Appending struct {
	s     *Store
	id    string
	seq   uint64
	meta  []byte
	ref   chunkRef
	parts [2][]byte
	rec   [1][][]byte
	q     contentlog.Queued
	// entry is the chunk's index entry, queued once the record is
	// durable: it lives as long as the Appending, until its commit.
	entry indexEntry
	// headRoom holds the record's head, when it fits.
	headRoom [headRoomLen]byte
}

// headRoomLen is room for the head of a record without metadata whose
// session id is a UUID, or a little longer.
const headRoomLen = recFixed + 48

// key is the session's id as the index's key: a slice of head, the
// record's head, which holds it.
func (a *Appending) key(head []byte) []byte {
	return head[4 : 4+len(a.id) : 4+len(a.id)]
}

// durableFunc is a func as a contentlog.Durable.
type durableFunc func([]contentlog.Ref)

func (f durableFunc) Durable(refs []contentlog.Ref) { f(refs) }

// logDurable is an Appending as what the log tells once its record is
// durable (contentlog.Durable): a pointer, where a method value was an
// allocation.
type logDurable Appending

func (d *logDurable) Durable(refs []contentlog.Ref) { (*Appending)(d).durable(refs) }

// durable queues the record's index entry; the log calls it once the
// record is synced, in log order.
func (a *Appending) durable(refs []contentlog.Ref) {
	// Written: the chunk is its caller's again. The entry below keeps a
	// alive until its commit, a second or more and thousands of entries
	// later, which must not keep the chunks too.
	a.parts[1] = nil
	a.ref.rec = refs[0]
	a.s.addLive(a.ref.rec.Seg, a.ref.rec.Size())
	a.entry = indexEntry{pi: pendingIndex{key: a.key(a.parts[0]), seq: a.seq, ref: a.ref}, id: a.id, meta: a.meta,
		end: contentlog.Pos{Seg: a.ref.rec.Seg, Off: a.ref.rec.End()}}
	a.s.deferIndex(&a.entry)
}

// Wait waits until the chunk is durable and returns nil, or returns why it
// is not (it may be found in the store after a restart, or not, as after a
// failed Append). Only one goroutine may call it, once.
func (a *Appending) Wait() error {
	if _, err := a.q.Wait(); err != nil {
		a.s.fenceAfter(err)
		return fmt.Errorf("store: session %q chunk %d: %w", a.id, a.seq, err)
	}
	return nil
}

// maxChunk bounds one chunk: a record of the log holds it whole.
const maxChunk = contentlog.MaxRecord - 1<<20

// Finish stores meta as the metadata of session id and drops its chunks, in
// one transaction: a session that ended keeps only its summary, and doing
// both in one commit saves a finalize (or an abort) two of its fsyncs. It
// returns once that transaction is durable.
func (s *Store) Finish(id string, meta []byte) error {
	if err := validate(id, meta); err != nil {
		return err
	}
	return s.reclaimAfter(s.write(s.finish(id, meta)))
}

// FinishLater is Finish without the wait: the write rides the next commit
// (or commits by itself within a second) and notify, which must not block,
// receives its outcome. Until then the store still holds what was there
// before, which is what a crash leaves to recovery. A later write of the
// same session is committed after it.
func (s *Store) FinishLater(id string, meta []byte, notify func(error)) {
	if err := validate(id, meta); err != nil {
		notify(err)
		return
	}
	s.writeLater(s.finish(id, meta), func(err error) {
		notify(err)
		s.reclaimAfter(err)
	})
}

func (s *Store) finish(id string, meta []byte) func(tx *bolt.Tx) error {
	key := []byte(id)
	return func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Put(key, meta); err != nil {
			return err
		}
		chunks := tx.Bucket(bucketChunks)
		b := chunks.Bucket(key)
		if b == nil {
			return nil
		}
		s.dropChunksOnCommit(tx, b)
		return chunks.DeleteBucket(key)
	}
}

// DeleteChunks drops the chunks of session id and keeps its metadata, for
// sessions that are finished but still reported. Dropping the chunks of a
// session that has none is not an error; an unknown session is ErrNotFound.
func (s *Store) DeleteChunks(id string) error {
	if err := validate(id); err != nil {
		return err
	}
	key := []byte(id)
	return s.reclaimAfter(s.write(func(tx *bolt.Tx) error {
		sessions, chunks := tx.Bucket(bucketSessions), tx.Bucket(bucketChunks)
		b := chunks.Bucket(key)
		if b == nil {
			if _, ok := lookup(sessions, key); !ok {
				return notFound(id)
			}
			return nil
		}
		// The metadata kept among the chunks moves to the sessions
		// bucket before they go.
		if meta, ok := lookup(b, keyChunkMeta); ok {
			if err := sessions.Put(key, append([]byte(nil), meta...)); err != nil {
				return err
			}
		}
		s.dropChunksOnCommit(tx, b)
		return chunks.DeleteBucket(key)
	}))
}

// Delete drops session id, metadata and chunks. An unknown session is
// ErrNotFound.
func (s *Store) Delete(id string) error {
	if err := validate(id); err != nil {
		return err
	}
	key := []byte(id)
	return s.reclaimAfter(s.write(func(tx *bolt.Tx) error {
		sessions, chunks := tx.Bucket(bucketSessions), tx.Bucket(bucketChunks)
		_, hasMeta := lookup(sessions, key)
		hasChunks := chunks.Bucket(key) != nil
		if !hasMeta && !hasChunks {
			return notFound(id)
		}
		if hasChunks {
			s.dropChunksOnCommit(tx, chunks.Bucket(key))
			if err := chunks.DeleteBucket(key); err != nil {
				return err
			}
		}
		if hasMeta {
			return sessions.Delete(key)
		}
		return nil
	}))
}

func notFound(id string) error {
	return fmt.Errorf("store: session %q: %w", id, ErrNotFound)
}

// lookup is Get that tells an empty value from a missing key; bbolt returns
// nil for both in some cases.
func lookup(b *bolt.Bucket, key []byte) ([]byte, bool) {
	k, v := b.Cursor().Seek(key)
	if k == nil || string(k) != string(key) {
		return nil, false
	}
	return v, true
}

// sessionMeta returns the current metadata of the session key: the last
// Append's, kept among its chunks, or else the sessions bucket's.
func sessionMeta(tx *bolt.Tx, key []byte) ([]byte, bool) {
	if v, ok := chunkMeta(tx, key); ok {
		return v, true
	}
	return lookup(tx.Bucket(bucketSessions), key)
}

// chunkMeta returns the metadata of the session key's last Append, unless
// a PutMeta has replaced it since.
func chunkMeta(tx *bolt.Tx, key []byte) ([]byte, bool) {
	chunks := tx.Bucket(bucketChunks).Bucket(key)
	if chunks == nil {
		return nil, false
	}
	return lookup(chunks, keyChunkMeta)
}
