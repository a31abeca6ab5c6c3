package store

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/orion-agent/orion/internal/failpoint"

	bolt "go.etcd.io/bbolt"
)

// Layout of versions 1 to 3, which kept chunks in the bbolt file: a chunk of
// up to partSize bytes under its 8-byte seq, a larger one as parts under
// seq and a 4-byte part index, concatenated in key order.
const (
	seqLen     = 8
	partKeyLen = seqLen + 4
	partSize   = 2000
)

// migrateBatchBytes bounds the content a migration appends to the log in one
// call.
const migrateBatchBytes = 4 << 20

// migrate moves the chunks of a version 1 to 3 file, and the values of the
// content buckets of a version 1 to 4 file, into the content log and
// replaces them with index entries, in one bbolt commit that also writes the
// new schema version. The log is synced before that commit: until it
// happens, the file is still a complete old file, and a crash leaves records
// in the log that no one indexes (all flagged indexed, so never replayed):
// Open removes the log of a file older than the log before migrating, and
// a version 4 file's are dead records its segments' reclaim drops, so a
// second attempt starts afresh.
//
// A version 5 file is a version 6 file without the records version 6 added:
// its migration only rewrites the number.
func (s *Store) migrate(from uint64) error {
	if from >= 5 {
		err := s.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keySchema, encodeSeq(schemaVersion))
		})
		if err != nil {
			return fmt.Errorf("migrate version %d: %w", from, err)
		}
		return nil
	}
	type moved struct {
		id     []byte
		seq    uint64
		ref    chunkRef
		bucket string // a content bucket's value under key id, else a chunk
	}
	var (
		all     []moved
		recs    [][]byte
		pending []moved // recs' entries, refs not known yet
		size    int
	)
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		refs, err := s.log.Append(recs, nil)
		if err != nil {
			return err
		}
		for i := range pending {
			pending[i].ref.rec = refs[i]
		}
		all = append(all, pending...)
		recs, pending, size = recs[:0], pending[:0], 0
		return nil
	}
	// The old file is read in one transaction: nothing else writes yet.
	err := s.db.View(func(tx *bolt.Tx) error {
		for name := range contentBuckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				continue
			}
			if err := b.ForEach(func(k, v []byte) error {
				rec, at := encodeValueRecord(name, k, v)
				recs = append(recs, rec)
				pending = append(pending, moved{
					id: append([]byte(nil), k...), bucket: name,
					ref: chunkRef{at: uint32(at), len: uint32(len(v))},
				})
				if size += len(rec); size >= migrateBatchBytes {
					return flush()
				}
				return nil
			}); err != nil {
				return err
			}
		}
		chunks := tx.Bucket(bucketChunks)
		if chunks == nil || from >= 4 {
			return nil
		}
		return chunks.ForEachBucket(func(id []byte) error {
			b := chunks.Bucket(id)
			meta, _ := sessionMeta(tx, id)
			c := b.Cursor()
			for k, v := c.First(); k != nil; {
				if len(k) != seqLen && len(k) != partKeyLen {
					k, v = c.Next()
					continue
				}
				seq := decodeSeq(k)
				var chunk []byte
				for ; k != nil && (len(k) == seqLen || len(k) == partKeyLen) && decodeSeq(k) == seq; k, v = c.Next() {
					chunk = append(chunk, v...)
				}
				rec, at := encodeChunkRecord(string(id), seq, meta, chunk, flagIndexed)
				recs = append(recs, rec)
				pending = append(pending, moved{
					id: append([]byte(nil), id...), seq: seq,
					ref: chunkRef{at: uint32(at), len: uint32(len(chunk))},
				})
				if size += len(rec); size >= migrateBatchBytes {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("migrate version %d: %w", from, err)
	}
	failpoint.Hit("store.migrate-logged")
	end := s.log.End()
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := createBuckets(tx); err != nil {
			return err
		}
		for _, m := range all {
			if m.bucket == "" {
				continue
			}
			// The value's key is there: the bucket was read above,
			// and nothing else writes.
			if err := tx.Bucket([]byte(m.bucket)).Put(m.id, m.ref.encode()); err != nil {
				return err
			}
		}
		if from >= 4 {
			if err := setLogPos(tx, end); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySchema, encodeSeq(schemaVersion))
		}
		chunks := tx.Bucket(bucketChunks)
		// Drop the old chunk keys, then write the new entries.
		var ids [][]byte
		if err := chunks.ForEachBucket(func(id []byte) error {
			ids = append(ids, append([]byte(nil), id...))
			return nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			b := chunks.Bucket(id)
			var keys [][]byte
			if err := b.ForEach(func(k, _ []byte) error {
				if len(k) == seqLen || len(k) == partKeyLen {
					keys = append(keys, append([]byte(nil), k...))
				}
				return nil
			}); err != nil {
				return err
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		for _, m := range all {
			if m.bucket != "" {
				continue
			}
			b := chunks.Bucket(m.id)
			b.FillPercent = appendFillPercent
			if err := b.Put(encodeSeq(m.seq), m.ref.encode()); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketMeta).Put(keyLogPos, encodePos(end)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, encodeSeq(schemaVersion))
	})
	if err != nil {
		return fmt.Errorf("migrate version %d: %w", from, err)
	}
	values := 0
	for _, m := range all {
		if m.bucket != "" {
			values++
		}
	}
	if len(all) > 0 {
		slog.Info("store: moved the content of unfinished sessions, backups and checkpoints to the content log",
			"from_schema", from, "chunks", len(all)-values, "values", values)
	}
	return nil
}

// createBuckets creates the buckets of the layout that are missing.
func createBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketMeta, bucketSessions, bucketChunks} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// compactFile rewrites the bbolt file without its free pages, when they are
// most of it: a migration moves the contents out of the file, and bbolt
// never shrinks it, so a store that kept hundreds of MiB of checkpoint
// contents would otherwise keep taking that much disk next to the log
// that now holds them. Every start checks, so a start killed before the
// rewrite (or during it) is followed by one that makes it. The copy (bbolt's Compact) is written and synced
// under a temporary name, renamed over the file and the directory synced:
// a crash leaves the migrated file or its copy, both whole. The old file
// stays open, holding the lock, until the copy is open.
func (s *Store) compactFile(opts *bolt.Options) error {
	var high int64
	if err := s.db.View(func(tx *bolt.Tx) error {
		high = tx.Size()
		return nil
	}); err != nil {
		return err
	}
	// A copy left by a start killed while writing it is never used.
	tmp := compactPath(s.path)
	os.Remove(tmp)
	st := s.db.Stats()
	free := int64(st.FreePageN+st.PendingPageN) * int64(s.db.Info().PageSize)
	if free < compactFileMin || free < high/2 {
		return nil
	}
	dst, err := bolt.Open(tmp, 0o600, opts)
	if err != nil {
		return fmt.Errorf("compact store file: %w", err)
	}
	if err := bolt.Compact(dst, s.db, compactTxBytes); err != nil {
		dst.Close()
		os.Remove(tmp)
		return fmt.Errorf("compact store file: %w", err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact store file: %w", err)
	}
	failpoint.Hit("store.compact-file")
	if err := os.Rename(tmp, s.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact store file: %w", err)
	}
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("compact store file: %w", err)
	}
	db, err := bolt.Open(s.path, 0o600, opts)
	if err != nil {
		return fmt.Errorf("compact store file: reopen: %w", err)
	}
	s.db.Close()
	s.db = db
	slog.Info("store: rewrote the store file without the space the migration freed", "freed_bytes", free)
	return nil
}

// compactFileMin is the free space under which compactFile leaves the file
// as it is; compactTxBytes bounds one transaction of the copy.
const (
	compactFileMin = 1 << 20
	compactTxBytes = 64 << 20
)

// compactPath is the temporary name of the file compactFile writes.
func compactPath(path string) string { return path + ".compact" }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
