package store

import (
	"encoding/binary"
	"fmt"

	"github.com/orion-agent/orion/internal/contentlog"

	bolt "go.etcd.io/bbolt"
)

// contentBuckets are the named buckets whose values are file contents
// rather than small records: the backups finalizes keep of what they
// replace, and the checkpoints' contents. Their values live in the content
// log like chunks, and the bucket holds each key's index entry. The set is
// part of the layout (schema 5): a file's values are read as index entries
// or as bytes according to it, so a name is never taken out of it.
var contentBuckets = map[string]bool{
	"backups":          true,
	"checkpoint_blobs": true,
}

// IsContentBucket reports whether the values of the named bucket are kept in
// the content log. The KV methods behave the same either way; a user of a
// content bucket states it in a test, so that renaming its bucket cannot
// move its contents back into the bbolt file unnoticed.
func IsContentBucket(name string) bool { return contentBuckets[name] }

// A value record in the content log is
//
//	kind      uint8   recValue
//	flags     uint8   flagIndexed, unless an Append's batch holds it
//	bucketLen uint8
//	bucket    [bucketLen]byte
//	keyLen    uint16
//	key       [keyLen]byte
//	value     (the rest)
//
// A value flagged indexed has its index entry committed with the write
// that made it, so recovery never replays it. One without the flag was
// written in the batch of an Append (see Append): its entry rides a later
// commit with the chunk's, and recovery replays it from bucket and key, in
// log order with the chunks.
const recValue = 2

// encodeValueRecord returns the record of a value indexed by the commit
// that writes it, and where the value starts in it.
func encodeValueRecord(bucket string, key, value []byte) ([]byte, int) {
	return encodeValueRecordFlags(bucket, key, value, flagIndexed)
}

// encodeValueRecordFlags is encodeValueRecord with the record's flags.
func encodeValueRecordFlags(bucket string, key, value []byte, flags byte) ([]byte, int) {
	rec := make([]byte, 0, 5+len(bucket)+len(key)+len(value))
	rec = append(rec, recValue, flags, byte(len(bucket)))
	rec = append(rec, bucket...)
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(key)))
	rec = append(rec, key...)
	at := len(rec)
	return append(rec, value...), at
}

// decodeValueRecord returns the bucket and key of a value record, and where
// its value starts.
func decodeValueRecord(rec []byte) (bucket string, key []byte, at int, ok bool) {
	if len(rec) < 3 || rec[0] != recValue {
		return "", nil, 0, false
	}
	n := int(rec[2])
	rest := rec[3:]
	if len(rest) < n+2 {
		return "", nil, 0, false
	}
	bucket, rest = string(rest[:n]), rest[n:]
	k := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) < k {
		return "", nil, 0, false
	}
	return bucket, rest[:k], 3 + n + 2 + k, true
}

// contentOnly reports whether every put stores in a content bucket.
func contentOnly(puts []Put) bool {
	for _, p := range puts {
		if !contentBuckets[p.Bucket] {
			return false
		}
	}
	return true
}

// deferredValue is a content bucket's value written in an Append's batch,
// whose index entry waits with the chunk's (deferIndex).
type deferredValue struct {
	bucket string
	key    []byte
	ref    chunkRef
}

// putValues stores the index entries of vals, whose records already count
// as live (they did from their sync): only the records of the entries
// they replace stop counting once tx commits.
func (s *Store) putValues(tx *bolt.Tx, vals []deferredValue) error {
	for _, v := range vals {
		b, err := tx.CreateBucketIfNotExists([]byte(v.bucket))
		if err != nil {
			return err
		}
		if old, ok := decodeChunkRef(b.Get(v.key)); ok && old != v.ref {
			s.liveOnCommit(tx, old.rec.Seg, -old.rec.Size())
		}
		if err := b.Put(v.key, v.ref.encode()); err != nil {
			return err
		}
	}
	return nil
}

// hasContent reports whether puts store a value in a content bucket.
func hasContent(puts []Put) bool {
	for _, p := range puts {
		if contentBuckets[p.Bucket] && len(p.KVs) > 0 {
			return true
		}
	}
	return false
}

// logValues appends lead (records of the caller's, such as a chunk) and
// then the values puts store in content buckets to the log, in one batch,
// and returns the refs of lead and puts with those values replaced by their
// index entries. The caller holds indexMu for reading until the commit that
// stores the entries has ended, so that no reclaim takes their segment
// before they are live.
func (s *Store) logValues(lead [][][]byte, puts []Put) ([]contentlog.Ref, []Put, error) {
	recs := append([][][]byte(nil), lead...)
	var at []int
	for _, p := range puts {
		if !contentBuckets[p.Bucket] {
			continue
		}
		for _, kv := range p.KVs {
			rec, a := encodeValueRecord(p.Bucket, kv.Key, kv.Value)
			recs = append(recs, [][]byte{rec})
			at = append(at, a)
		}
	}
	if len(recs) == 0 {
		return nil, puts, nil
	}
	refs, err := s.log.AppendParts(recs, nil)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Put, len(puts))
	i := len(lead)
	for n, p := range puts {
		out[n] = p
		if !contentBuckets[p.Bucket] {
			continue
		}
		kvs := make([]KV, len(p.KVs))
		for j, kv := range p.KVs {
			ref := chunkRef{rec: refs[i], at: uint32(at[i-len(lead)]), len: uint32(len(kv.Value))}
			kvs[j] = KV{Key: kv.Key, Value: ref.encode()}
			i++
		}
		out[n].KVs = kvs
	}
	return refs[:len(lead)], out, nil
}

// applyPuts stores puts in tx, creating buckets as needed. The values of
// content buckets must be index entries already (logValues): the records
// they point to count as live once tx commits, and those of the entries
// they replace stop counting.
func (s *Store) applyPuts(tx *bolt.Tx, puts []Put) error {
	for _, p := range puts {
		b, err := tx.CreateBucketIfNotExists([]byte(p.Bucket))
		if err != nil {
			return err
		}
		content := contentBuckets[p.Bucket]
		for _, kv := range p.KVs {
			if content {
				ref, ok := decodeChunkRef(kv.Value)
				if !ok {
					return fmt.Errorf("store: bucket %q: value not stored in the content log first", p.Bucket)
				}
				if old, ok := decodeChunkRef(b.Get(kv.Key)); ok {
					s.liveOnCommit(tx, old.rec.Seg, -old.rec.Size())
				}
				s.liveOnCommit(tx, ref.rec.Seg, ref.rec.Size())
			}
			if err := b.Put(kv.Key, kv.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteKeys removes keys from the named bucket in tx; the records of a
// content bucket's values stop counting as live once tx commits.
func (s *Store) deleteKeys(tx *bolt.Tx, bucket string, keys [][]byte) error {
	b := tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	content := contentBuckets[bucket]
	for _, k := range keys {
		if content {
			if old, ok := decodeChunkRef(b.Get(k)); ok {
				s.liveOnCommit(tx, old.rec.Seg, -old.rec.Size())
			}
		}
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// readValue reads the value an index entry of a content bucket points to,
// appending it to buf[:0]. The caller holds readMu for reading from the
// transaction that found v.
func (s *Store) readValue(buf []byte, bucket string, k, v []byte) ([]byte, error) {
	ref, ok := decodeChunkRef(v)
	if !ok {
		return buf[:0], fmt.Errorf("store: bucket %q key %x: index entry of %d bytes: %w", bucket, k, len(v), ErrDamaged)
	}
	out, err := s.readChunkRef(buf[:0], ref)
	if err != nil {
		return out, fmt.Errorf("store: bucket %q key %x: %w", bucket, k, err)
	}
	return out, nil
}
