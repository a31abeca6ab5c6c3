package store

import (
	"fmt"

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
	return s.write(func(tx *bolt.Tx) error {
		if err := applyPuts(tx, puts); err != nil {
			return err
		}
		// The metadata of the last Append would supersede meta.
		if chunks := tx.Bucket(bucketChunks).Bucket(key); chunks != nil {
			if err := chunks.Delete(keyChunkMeta); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSessions).Put(key, meta)
	})
}

// Append stores chunk as number seq of session id and replaces the session's
// metadata with meta, both in one transaction, and returns once that
// transaction is durable. Concurrent calls share commits.
//
// Appending a seq that exists replaces that chunk, so retrying an Append
// whose outcome is unknown is safe. chunk and meta must not be modified until
// Append returns. The keys and values of puts, if any, are stored in the
// same transaction (as PutKVs would): a session written in one request
// journals its backup with its content.
func (s *Store) Append(id string, seq uint64, chunk, meta []byte, puts ...Put) error {
	if err := validate(id, chunk, meta); err != nil {
		return err
	}
	if err := checkPuts(puts); err != nil {
		return err
	}
	key := []byte(id)
	seqKey := encodeSeq(seq)
	return s.write(func(tx *bolt.Tx) error {
		if err := applyPuts(tx, puts); err != nil {
			return err
		}
		chunks, err := tx.Bucket(bucketChunks).CreateBucketIfNotExists(key)
		if err != nil {
			return fmt.Errorf("store: session %q: %w", id, err)
		}
		chunks.FillPercent = appendFillPercent
		if err := putChunk(chunks, seq, seqKey, chunk); err != nil {
			return fmt.Errorf("store: session %q chunk %d: %w", id, seq, err)
		}
		// The metadata goes next to the chunk (see the package comment);
		// the sessions bucket is written only to list a session that had
		// no PutMeta yet.
		if err := chunks.Put(keyChunkMeta, meta); err != nil {
			return fmt.Errorf("store: session %q: %w", id, err)
		}
		sessions := tx.Bucket(bucketSessions)
		if _, ok := lookup(sessions, key); ok {
			return nil
		}
		return sessions.Put(key, meta)
	})
}

// putChunk stores chunk as number seq in b, whole or as parts (see the
// package comment), replacing whatever chunk seq was before in either form.
func putChunk(b *bolt.Bucket, seq uint64, seqKey, chunk []byte) error {
	if err := deleteChunk(b, seq, seqKey); err != nil {
		return err
	}
	if len(chunk) <= partSize {
		return b.Put(seqKey, chunk)
	}
	for i := uint32(0); len(chunk) > 0; i++ {
		n := min(len(chunk), partSize)
		if err := b.Put(partKey(seq, i), chunk[:n]); err != nil {
			return err
		}
		chunk = chunk[n:]
	}
	return nil
}

// deleteChunk deletes chunk seq from b, whole or in parts, if it is there.
// The keys are collected first: deleting under a bbolt cursor skips keys.
func deleteChunk(b *bolt.Bucket, seq uint64, seqKey []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(seqKey); k != nil && isChunkKey(k) && decodeSeq(k) == seq; k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Finish stores meta as the metadata of session id and drops its chunks, in
// one transaction: a session that ended keeps only its summary, and doing
// both in one commit saves a finalize (or an abort) two of its fsyncs. It
// returns once that transaction is durable.
func (s *Store) Finish(id string, meta []byte) error {
	if err := validate(id, meta); err != nil {
		return err
	}
	return s.write(finish(id, meta))
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
	s.writeLater(finish(id, meta), notify)
}

func finish(id string, meta []byte) func(tx *bolt.Tx) error {
	key := []byte(id)
	return func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Put(key, meta); err != nil {
			return err
		}
		chunks := tx.Bucket(bucketChunks)
		if chunks.Bucket(key) == nil {
			return nil
		}
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
	return s.write(func(tx *bolt.Tx) error {
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
		return chunks.DeleteBucket(key)
	})
}

// Delete drops session id, metadata and chunks. An unknown session is
// ErrNotFound.
func (s *Store) Delete(id string) error {
	if err := validate(id); err != nil {
		return err
	}
	key := []byte(id)
	return s.write(func(tx *bolt.Tx) error {
		sessions, chunks := tx.Bucket(bucketSessions), tx.Bucket(bucketChunks)
		_, hasMeta := lookup(sessions, key)
		hasChunks := chunks.Bucket(key) != nil
		if !hasMeta && !hasChunks {
			return notFound(id)
		}
		if hasChunks {
			if err := chunks.DeleteBucket(key); err != nil {
				return err
			}
		}
		if hasMeta {
			return sessions.Delete(key)
		}
		return nil
	})
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
