// Package blobstore keeps file contents by their SHA-256: a content stored
// by many checkpoints is stored once. Contents are compressed with zstd
// when that makes them smaller, and kept raw otherwise (already
// compressed files, tiny ones).
//
// Store is the small interface the checkpoint engine needs; Bolt is its
// implementation in the daemon's store: one content bucket (key the hash,
// value a format byte and the bytes), whose values the store keeps in its
// content log, and a bucket of their sizes in the bbolt file.
package blobstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/store"
)

// FailpointRelease is passed before a release commits, for crash tests.
const FailpointRelease = "blobstore.release"

// Hash is a content's SHA-256.
type Hash = [sha256.Size]byte

// Blob is one content to store.
type Blob struct {
	Hash Hash
	Data []byte
}

// ErrNotFound is returned by Get for a hash not stored (never, or
// released).
var ErrNotFound = errors.New("blobstore: content not stored")

// Store keeps contents by hash. Put is idempotent; Release drops contents
// nothing refers to any more (the caller decides that).
type Store interface {
	// Put stores every blob not stored yet, durably, in one commit, and
	// returns the bytes it added (as stored, compressed).
	Put(blobs []Blob) (int64, error)
	Get(h Hash) ([]byte, error)
	Has(h Hash) (bool, error)
	Release(hs []Hash) error
	// ForEach calls fn with every stored hash until it returns false.
	ForEach(fn func(h Hash) bool) error
	// Stats returns how many contents are stored and their stored bytes.
	Stats() (count, bytes int64)
}

// Bucket is the store's content bucket of Bolt's contents (the store keeps
// its values in the content log); SizeBucket holds each content's stored
// size under the same key, and says which contents are stored: Has,
// ForEach and the counts read it only. A content whose size entry is gone
// is not stored, whatever the log still holds.
const (
	Bucket     = "checkpoint_blobs"
	SizeBucket = "checkpoint_blob_sizes"
)

// Value formats.
const (
	formatRaw  = 0
	formatZstd = 1
)

// Bolt is Store in the daemon's bbolt file.
type Bolt struct {
	st           *store.Store
	count, bytes atomic.Int64
	mu           sync.Mutex // serializes Put's check-then-store
}

var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
)

// OpenBolt returns the blob store of st, counting what it holds. Contents
// without a size entry, which a crash in the middle of a release by an
// earlier release could leave (it deleted the sizes and the contents in two
// commits), are released: nothing counts or finds them.
func OpenBolt(st *store.Store) (*Bolt, error) {
	b := &Bolt{st: st}
	sizes := map[Hash]bool{}
	err := st.ScanKV(SizeBucket, nil, func(k, v []byte) (bool, error) {
		b.count.Add(1)
		if len(v) == 8 {
			b.bytes.Add(int64(binary.BigEndian.Uint64(v)))
		}
		if len(k) == len(Hash{}) {
			sizes[Hash(k)] = true
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	var orphans [][]byte
	err = st.ScanKeys(Bucket, func(k []byte) bool {
		if len(k) != len(Hash{}) || !sizes[Hash(k)] {
			orphans = append(orphans, bytes.Clone(k))
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(orphans) > 0 {
		if err := st.DeleteKV(Bucket, orphans); err != nil {
			return nil, fmt.Errorf("blobstore: releasing %d contents no size names: %w", len(orphans), err)
		}
	}
	return b, nil
}

// Encode returns data as stored: a format byte, then the bytes.
func Encode(data []byte) []byte {
	if len(data) >= 64 {
		z := encoder.EncodeAll(data, make([]byte, 1, len(data)/2+16))
		if len(z) < len(data) {
			z[0] = formatZstd
			return z
		}
	}
	return append([]byte{formatRaw}, data...)
}

// Decode reverses Encode.
func Decode(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, errors.New("blobstore: empty value")
	}
	switch v[0] {
	case formatRaw:
		return bytes.Clone(v[1:]), nil
	case formatZstd:
		return decoder.DecodeAll(v[1:], nil)
	}
	return nil, fmt.Errorf("blobstore: unknown format %d", v[0])
}

// Put implements Store.
func (b *Bolt) Put(blobs []Blob) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var missing []Blob
	seen := map[Hash]bool{}
	for _, bl := range blobs {
		if seen[bl.Hash] {
			continue
		}
		seen[bl.Hash] = true
		if ok, err := b.Has(bl.Hash); err != nil {
			return 0, err
		} else if !ok {
			missing = append(missing, bl)
		}
	}
	// Compressing is most of a first checkpoint's CPU: a few at once.
	values := make([][]byte, len(missing))
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(missing))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(missing); i += workers {
				values[i] = Encode(missing[i].Data)
			}
		}()
	}
	wg.Wait()
	var kvs, sizes []store.KV
	var added int64
	for i, bl := range missing {
		v := values[i]
		kvs = append(kvs, store.KV{Key: bytes.Clone(bl.Hash[:]), Value: v})
		sizes = append(sizes, store.KV{Key: bytes.Clone(bl.Hash[:]), Value: binary.BigEndian.AppendUint64(nil, uint64(len(v)))})
		added += int64(len(v))
	}
	if len(kvs) == 0 {
		return 0, nil
	}
	if err := b.st.PutKVs(store.Put{Bucket: Bucket, KVs: kvs}, store.Put{Bucket: SizeBucket, KVs: sizes}); err != nil {
		return 0, err
	}
	b.count.Add(int64(len(kvs)))
	b.bytes.Add(added)
	return added, nil
}

// Get implements Store.
func (b *Bolt) Get(h Hash) ([]byte, error) {
	if ok, err := b.Has(h); err != nil || !ok {
		if err == nil {
			err = ErrNotFound
		}
		return nil, err
	}
	v, found, err := b.st.GetKV(Bucket, h[:])
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	data, err := Decode(v)
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(data) != h {
		return nil, fmt.Errorf("blobstore: content of %x does not match its hash", h[:8])
	}
	return data, nil
}

// Has implements Store.
func (b *Bolt) Has(h Hash) (bool, error) {
	_, found, err := b.st.GetKV(SizeBucket, h[:])
	return found, err
}

// Release implements Store.
func (b *Bolt) Release(hs []Hash) error {
	if len(hs) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys [][]byte
	var freed int64
	for _, h := range hs {
		v, found, err := b.st.GetKV(SizeBucket, h[:])
		if err != nil {
			return err
		}
		if found {
			if len(v) == 8 {
				freed += int64(binary.BigEndian.Uint64(v))
			}
			keys = append(keys, bytes.Clone(h[:]))
		}
	}
	// Sizes and contents in one commit: a crash leaves both or neither.
	failpoint.Hit(FailpointRelease)
	if err := b.st.DeleteKVs(store.Del{Bucket: SizeBucket, Keys: keys}, store.Del{Bucket: Bucket, Keys: keys}); err != nil {
		return err
	}
	b.count.Add(-int64(len(keys)))
	b.bytes.Add(-freed)
	return nil
}

// Stats implements Store.
func (b *Bolt) Stats() (int64, int64) { return b.count.Load(), b.bytes.Load() }

// ForEach calls fn with every stored hash, for a sweep.
func (b *Bolt) ForEach(fn func(h Hash) bool) error {
	return b.st.ScanKV(SizeBucket, nil, func(k, v []byte) (bool, error) {
		var h Hash
		copy(h[:], k)
		return fn(h), nil
	})
}
