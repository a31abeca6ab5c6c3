package store

import (
	"bytes"
	"fmt"

	"github.com/orion-agent/orion/internal/contentlog"
	"github.com/orion-agent/orion/internal/failpoint"

	bolt "go.etcd.io/bbolt"
)

// KV is one key and value of a named bucket.
type KV struct {
	Key, Value []byte
}

// The journal's own buckets are not reachable through the KV methods, so
// another concern (traces, backups) cannot corrupt sessions by accident.
func checkBucket(name string) error {
	switch name {
	case string(bucketMeta), string(bucketSessions), string(bucketChunks), "":
		return fmt.Errorf("store: bucket name %q is reserved", name)
	}
	return nil
}

// PutKV stores kvs in the named bucket, creating it if needed, in one
// durable transaction shared with concurrent writes (group commit).
func (s *Store) PutKV(bucket string, kvs []KV) error {
	return s.PutKVs(Put{Bucket: bucket, KVs: kvs})
}

// Put is the keys and values PutKVs stores in one bucket.
type Put struct {
	Bucket string
	KVs    []KV
}

// PutKVs stores each put's keys and values in its bucket, creating buckets
// as needed, all in one durable transaction shared with concurrent writes:
// either every put is stored or none is. Values of content buckets
// (IsContentBucket) are appended to the content log first, and the
// transaction stores where they are.
func (s *Store) PutKVs(puts ...Put) error {
	if err := checkPuts(puts); err != nil {
		return err
	}
	err := s.writePuts(nil, puts, nil)
	if hasContent(puts) {
		// A value replaced is a record dropped.
		return s.reclaimAfter(err)
	}
	return err
}

// writePuts logs lead (records of the caller's) and the values puts store
// in content buckets, then commits puts and, in the same transaction, apply
// (when not nil) with the refs of lead.
func (s *Store) writePuts(lead [][][]byte, puts []Put, apply func(tx *bolt.Tx, leadRefs []contentlog.Ref) error) error {
	var leadRefs []contentlog.Ref
	if len(lead) > 0 || hasContent(puts) {
		if s.isClosed() {
			return ErrClosed
		}
		s.indexMu.RLock()
		defer s.indexMu.RUnlock()
		if err := s.fenceFirst(); err != nil {
			return err
		}
		content := hasContent(puts)
		var err error
		if leadRefs, puts, err = s.logValues(lead, puts); err != nil {
			return err
		}
		if content {
			// Crash tests die here: the values are in the log, not
			// yet indexed; the write is not acknowledged.
			failpoint.Hit("store.values-logged")
		}
	}
	return s.write(func(tx *bolt.Tx) error {
		if err := s.applyPuts(tx, puts); err != nil {
			return err
		}
		if apply != nil {
			return apply(tx, leadRefs)
		}
		return nil
	})
}

// PutKVsLater is PutKVs without the wait, for bookkeeping whose loss in a
// crash is acceptable: the puts ride the next commit, or commit by
// themselves within Options.DeferDelay, and notify (which must not block)
// receives the outcome. Values of content buckets are not taken.
func (s *Store) PutKVsLater(notify func(error), puts ...Put) {
	if err := checkPuts(puts); err != nil {
		notify(err)
		return
	}
	if hasContent(puts) {
		notify(fmt.Errorf("store: PutKVsLater cannot store in a content bucket"))
		return
	}
	s.writeLater(func(tx *bolt.Tx) error { return s.applyPuts(tx, puts) }, notify)
}

// checkPuts rejects here what bbolt would reject in the transaction, so a
// bad key fails alone instead of failing the batch it was committed with.
func checkPuts(puts []Put) error {
	for _, p := range puts {
		if err := checkBucket(p.Bucket); err != nil {
			return err
		}
		for _, kv := range p.KVs {
			if len(kv.Key) == 0 || len(kv.Key) > bolt.MaxKeySize {
				return fmt.Errorf("store: key of %d bytes in bucket %q", len(kv.Key), p.Bucket)
			}
			if contentBuckets[p.Bucket] && len(kv.Value) > maxChunk {
				return fmt.Errorf("store: value of %d bytes in bucket %q, limit is %d", len(kv.Value), p.Bucket, maxChunk)
			}
		}
	}
	return nil
}

// ScanKV calls fn for the named bucket's keys from from (inclusive) up, in
// key order, until fn returns false or an error. fn runs inside a read
// transaction: it must be quick (a long one keeps freed pages from being
// reused), must not call the store, and must not keep k or v after it
// returns. A bucket that does not exist yet is empty. The values of a
// content bucket are read from the content log as the scan reaches them,
// checked against their checksums: a damaged one ends the scan with an
// error wrapping ErrDamaged, never as data.
func (s *Store) ScanKV(bucket string, from []byte, fn func(k, v []byte) (bool, error)) error {
	return s.scanKV(bucket, fn, func(c *bolt.Cursor) ([]byte, []byte) { return c.Seek(from) }, (*bolt.Cursor).Next, nil)
}

// ScanKVPrefix is ScanKV over the keys that begin with prefix. It stops at
// the first key without it before reading that key's value: in a content
// bucket, a scan that let fn see the key first would read a record of
// something else from the log, and fail on it if it were damaged.
func (s *Store) ScanKVPrefix(bucket string, prefix []byte, fn func(k, v []byte) (bool, error)) error {
	return s.scanKV(bucket, fn, func(c *bolt.Cursor) ([]byte, []byte) { return c.Seek(prefix) }, (*bolt.Cursor).Next,
		func(k []byte) bool { return !bytes.HasPrefix(k, prefix) })
}

// ScanKVReverse is ScanKV downwards: from the greatest key <= from (or
// the last key, when from is nil).
func (s *Store) ScanKVReverse(bucket string, from []byte, fn func(k, v []byte) (bool, error)) error {
	first := func(c *bolt.Cursor) ([]byte, []byte) {
		if from == nil {
			return c.Last()
		}
		k, v := c.Seek(from)
		switch {
		case k == nil:
			return c.Last()
		case !bytes.Equal(k, from):
			return c.Prev()
		}
		return k, v
	}
	return s.scanKV(bucket, fn, first, (*bolt.Cursor).Prev, nil)
}

// scanKV walks a named bucket from first, stepping with next, up to the
// first key for which stop, when set, is true.
func (s *Store) scanKV(bucket string, fn func(k, v []byte) (bool, error),
	first, next func(*bolt.Cursor) ([]byte, []byte), stop func(k []byte) bool) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	content := contentBuckets[bucket]
	if content {
		// Values an Append wrote are indexed by a later commit.
		s.flushIfDeferred()
		// From the transaction that finds the index entries to the
		// reads of their records: see readMu.
		s.readMu.RLock()
		defer s.readMu.RUnlock()
	}
	var buf []byte
	return s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := first(c); k != nil; k, v = next(c) {
			if stop != nil && stop(k) {
				return nil
			}
			if content {
				var err error
				if buf, err = s.readValue(buf, bucket, k, v); err != nil {
					return err
				}
				v = buf
			}
			more, err := fn(k, v)
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// ScanKeys calls fn with the named bucket's keys, in key order, until fn
// returns false. It reads no value: a content bucket's are left in the log.
// fn must not keep k after it returns, nor call the store.
func (s *Store) ScanKeys(bucket string, fn func(k []byte) bool) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if contentBuckets[bucket] {
		s.flushIfDeferred() // see scanKV
	}
	return s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && fn(k); k, _ = c.Next() {
		}
		return nil
	})
}

// GetKV returns a copy of the value of key in the named bucket, and whether
// the key is there. Unlike a scan from key, it reads nothing of another
// key's value.
func (s *Store) GetKV(bucket string, key []byte) ([]byte, bool, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, false, err
	}
	content := contentBuckets[bucket]
	if content {
		s.flushIfDeferred() // see scanKV
		s.readMu.RLock()
		defer s.readMu.RUnlock()
	}
	var (
		out   []byte
		found bool
	)
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		v, ok := lookup(b, key)
		if !ok {
			return nil
		}
		found = true
		if !content {
			out = append([]byte{}, v...)
			return nil
		}
		var err error
		out, err = s.readValue(nil, bucket, key, v)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, found, nil
}

// DeleteKV removes keys from the named bucket in one durable transaction.
func (s *Store) DeleteKV(bucket string, keys [][]byte) error {
	return s.DeleteKVs(Del{Bucket: bucket, Keys: keys})
}

// Del is the keys DeleteKVs removes from one bucket.
type Del struct {
	Bucket string
	Keys   [][]byte
}

// DeleteKVs removes each del's keys from its bucket, all in one durable
// transaction: either every key is gone or none is. The records of content
// buckets' values it drops are reclaimed with their segments.
func (s *Store) DeleteKVs(dels ...Del) error {
	return s.Update(nil, dels)
}

// Update stores puts and removes dels in one durable transaction, the
// removals after the puts.
func (s *Store) Update(puts []Put, dels []Del) error {
	if err := checkPuts(puts); err != nil {
		return err
	}
	for _, d := range dels {
		if err := checkBucket(d.Bucket); err != nil {
			return err
		}
	}
	err := s.writePuts(nil, puts, func(tx *bolt.Tx, _ []contentlog.Ref) error {
		for _, d := range dels {
			if err := s.deleteKeys(tx, d.Bucket, d.Keys); err != nil {
				return err
			}
		}
		return nil
	})
	for _, d := range dels {
		if contentBuckets[d.Bucket] {
			return s.reclaimAfter(err)
		}
	}
	if hasContent(puts) {
		return s.reclaimAfter(err)
	}
	return err
}
