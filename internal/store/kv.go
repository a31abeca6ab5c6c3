package store

import (
	"bytes"
	"fmt"

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
// either every put is stored or none is.
func (s *Store) PutKVs(puts ...Put) error {
	if err := checkPuts(puts); err != nil {
		return err
	}
	return s.write(func(tx *bolt.Tx) error { return applyPuts(tx, puts) })
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
		}
	}
	return nil
}

// applyPuts stores puts in tx, creating buckets as needed.
func applyPuts(tx *bolt.Tx, puts []Put) error {
	for _, p := range puts {
		b, err := tx.CreateBucketIfNotExists([]byte(p.Bucket))
		if err != nil {
			return err
		}
		for _, kv := range p.KVs {
			if err := b.Put(kv.Key, kv.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// ScanKV calls fn for the named bucket's keys from from (inclusive) up, in
// key order, until fn returns false or an error. fn runs inside a read
// transaction: it must be quick (a long one keeps freed pages from being
// reused), must not write to the store, and must not keep k or v after it
// returns. A bucket that does not exist yet is empty.
func (s *Store) ScanKV(bucket string, from []byte, fn func(k, v []byte) (bool, error)) error {
	return s.scanKV(bucket, fn, func(c *bolt.Cursor) ([]byte, []byte) { return c.Seek(from) }, (*bolt.Cursor).Next)
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
	return s.scanKV(bucket, fn, first, (*bolt.Cursor).Prev)
}

// scanKV walks a named bucket from first, stepping with next.
func (s *Store) scanKV(bucket string, fn func(k, v []byte) (bool, error),
	first, next func(*bolt.Cursor) ([]byte, []byte)) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	return s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := first(c); k != nil; k, v = next(c) {
			more, err := fn(k, v)
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// DeleteKV removes keys from the named bucket in one durable transaction.
func (s *Store) DeleteKV(bucket string, keys [][]byte) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	return s.write(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
