// Package store is oriond's durable journal: a bbolt file holding, per
// session, an opaque metadata value and the session's content as numbered
// chunks.
//
// Every write returns only after its transaction is on disk, so a caller may
// acknowledge data to its client as soon as a write returns. Writes from many
// goroutines are group-committed: whatever is queued while one commit is
// syncing goes into the next, so concurrent writers share the cost of the
// fsyncs instead of queueing behind each other.
//
// The package knows nothing about what sessions mean; ids, metadata and
// chunks are bytes to it.
//
// Layout of the file:
//
//	meta/schema       -> schema version, 8 bytes big-endian
//	sessions/<id>     -> metadata
//	chunks/<id>/<seq> -> chunk of up to partSize bytes; seq is 8 bytes
//	                     big-endian so that cursor order is sequence order
//	chunks/<id>/<seq><part>
//	                  -> part number part (4 bytes big-endian, from 0) of a
//	                     larger chunk (version 3): partSize bytes each but
//	                     the last; the chunk is their concatenation
//	chunks/<id>/ff*9  -> metadata written by Append (version 2); where
//	                     present it supersedes sessions/<id>
//
// Append keeps the metadata it rewrites with every chunk next to the
// chunks, in the leaf page the chunk dirties anyway, rather than in the
// sessions bucket: a commit of 32 appends from as many sessions then writes
// one leaf per session instead of also rewriting most of the sessions
// bucket (BenchmarkAppend, 64 writers, 500-byte metadata: median of 3 runs
// 8,300 -> 9,448 appends/s). The key is nine bytes, so it sorts after every
// eight-byte seq and every part key (no chunk has 0xff000000 parts) and is
// never taken for a chunk.
//
// A chunk larger than partSize is stored as parts so that the leaf holding
// that metadata, which every Append rewrites, stays small. bbolt keeps at
// least two keys in a leaf and rewrites a dirty leaf whole, overflow pages
// included: with 64 KiB chunks stored whole, the last leaf held two or three
// chunks and the metadata, and each 64 KiB append wrote 248 KiB of pages.
// Parts fill leaves of their own, two to a page, and the last leaf holds a
// part or two and the metadata (BenchmarkAppend64K).
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrNotFound reports an unknown session id or chunk. Errors wrapping it
// name the session.
var ErrNotFound = errors.New("not found")

// ErrLocked reports that another process holds the store file open. The
// file lock doubles as the daemon's single-instance lock, so this usually
// means another daemon is running on the same file. Open's error wrapping it
// names the file.
var ErrLocked = errors.New("file is locked by another process")

// ErrClosed reports a call on a Store after Close.
var ErrClosed = errors.New("store: closed")

// schemaVersion is the on-disk layout this package reads and writes. Bump it
// only with a migration in Open.
//
// Version 2 added metadata in the chunk buckets (keyChunkMeta). A version 1
// file is a valid version 2 file without any, so Open migrates it by
// rewriting the number; a version 1 build refuses a version 2 file, which
// it would misread.
//
// Version 3 added chunks stored as parts (partSize). A version 1 or 2 file
// is a valid version 3 file without any, migrated the same way; a version 2
// build refuses a version 3 file, in which it would miss every large chunk.
const schemaVersion = 3

var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketChunks   = []byte("chunks")
	keySchema      = []byte("schema")
	// keyChunkMeta holds, in a session's chunk bucket, the metadata of its
	// last Append; see the package comment.
	keyChunkMeta = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

const (
	// seqLen is the length of the key of a chunk stored whole.
	seqLen = 8
	// partKeyLen is the length of the key of a part: seq, then the part's
	// index.
	partKeyLen = seqLen + 4
	// partSize is the largest chunk stored whole and the size of a part.
	// Two parts and their keys fill a 4 KiB page exactly at fill percent 1
	// (16-byte page header, 16 bytes per element, 12-byte key: 2012 bytes
	// at most); 2048 would not fit two, and each page would spill into an
	// overflow page, doubling what a chunk writes.
	partSize = 2000
)

const (
	defaultLockTimeout = 100 * time.Millisecond
	defaultMaxBatch    = 256
)

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file lock before failing with ErrLocked. 0 means 100ms; a negative
	// value means a single attempt.
	LockTimeout time.Duration

	// MaxBatch caps the number of writes committed in one transaction. It
	// bounds the latency a single commit adds to the writers queued behind
	// it. 0 means 256.
	MaxBatch int

	// DeferDelay is the longest a deferred write (FinishLater) waits for
	// another commit to ride before it commits by itself. 0 means 1s.
	DeferDelay time.Duration
}

// Store is an open journal file. Its methods are safe for concurrent use.
type Store struct {
	path       string
	db         *bolt.DB
	maxBatch   int
	deferDelay time.Duration

	// mu orders writes against Close: writers hold it for reading while
	// they send on reqs or commit inline, Close for writing before it
	// closes reqs.
	mu     sync.RWMutex
	closed bool
	reqs   chan *request
	done   chan struct{} // closed when the committer has drained reqs

	// commitMu is held by whoever is committing: the committer, or a lone
	// writer committing inline (see write).
	commitMu sync.Mutex

	// deferred are writes waiting to ride the next commit (writeLater);
	// deferTimer commits them if none comes in time. Both under deferMu.
	deferMu    sync.Mutex
	deferred   []*request
	deferTimer *time.Timer

	// lastBatch is the size of the last batch the committer committed.
	lastBatch atomic.Int32

	commits atomic.Uint64
	writes  atomic.Uint64
}

// Open opens or creates the journal at path (mode 0600) and starts its
// committer. If another process has the file open, Open fails after
// opts.LockTimeout with an error wrapping ErrLocked.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	switch {
	case timeout == 0:
		timeout = defaultLockTimeout
	case timeout < 0:
		// bbolt treats 0 as "wait forever"; any positive value it has
		// already exceeded after the first attempt means "try once".
		timeout = time.Nanosecond
	}
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = defaultMaxBatch
	}

	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: timeout,
		// The freelist is rewritten by every commit and grows with
		// fragmentation, which dropping chunks produces all the time:
		// with 6,400 free pages a one-chunk commit wrote 72 KiB with it
		// and 20 KiB without. The price is a scan of the tree at Open
		// (40ms instead of 2ms for a 64 MiB file).
		NoFreelistSync: true,
		// The array freelist's cost grows with the number of free
		// pages; the map's does not.
		FreelistType: bolt.FreelistMapType,
		// With a mapping larger than the file the writer does not remap
		// as the file grows, and a remap waits for every open read
		// transaction. It also makes bbolt grow the file in 16 MiB
		// steps from the start (one extra fsync per 16 MiB) rather than
		// doubling it from 32 KiB with an fsync and a remap each time.
		// It reserves address space only.
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := initSchema(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}

	deferDelay := opts.DeferDelay
	if deferDelay <= 0 {
		deferDelay = defaultDeferDelay
	}
	s := &Store{
		path:       path,
		db:         db,
		maxBatch:   maxBatch,
		deferDelay: deferDelay,
		reqs:       make(chan *request, maxBatch),
		done:       make(chan struct{}),
	}
	go s.commitLoop()
	return s, nil
}

// initialMmapSize is the address space bbolt maps at Open. See Open.
const initialMmapSize = 1 << 30

// initSchema creates the buckets of a new file, migrates a version 1 or 2
// file and refuses a file written by an incompatible version. It writes only
// when something is missing or old, so reopening a current file costs no
// commit.
func initSchema(db *bolt.DB) error {
	var ok bool
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		ok, err = checkSchema(tx)
		return err
	})
	if err != nil || ok {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		if ok, err := checkSchema(tx); err != nil || ok {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keySchema, encodeSeq(schemaVersion)); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketSessions); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(bucketChunks)
		return err
	})
}

// checkSchema reports whether tx holds a complete layout of the current
// version. A missing or partial layout is not an error: it is a new file;
// nor are versions 1 and 2, which initSchema migrates.
func checkSchema(tx *bolt.Tx) (bool, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return false, nil
	}
	v := meta.Get(keySchema)
	if v == nil {
		return false, nil
	}
	if len(v) != 8 {
		return false, fmt.Errorf("schema version is %d bytes, want 8: not an oriond store", len(v))
	}
	if got := binary.BigEndian.Uint64(v); got != schemaVersion {
		if got == 1 || got == 2 {
			return false, nil
		}
		return false, fmt.Errorf("schema version %d, this build reads version %d: use a matching oriond or move the file aside", got, schemaVersion)
	}
	return tx.Bucket(bucketSessions) != nil && tx.Bucket(bucketChunks) != nil, nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close commits the writes already queued, stops the committer and closes
// the file, releasing its lock. Writes started after Close fail with
// ErrClosed. Calling Close again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs)
	s.mu.Unlock()

	<-s.done
	// Deferred writes are not given up at a graceful stop.
	s.flushDeferred()
	return s.db.Close()
}

// Stats describes the store for status reports and tests.
type Stats struct {
	Sessions int   // sessions with metadata
	Chunks   int   // chunks across all sessions
	FileSize int64 // apparent size of the file; bbolt grows it 16 MiB ahead, sparsely
	// HighWater is the end of the highest page bbolt has ever used: it
	// grows only when no freed page can be reused, so it shows whether
	// the store grows without bound where FileSize's 16 MiB steps cannot.
	HighWater int64

	// Commits and Writes count, since Open, the write transactions
	// committed and the writes they acknowledged. Writes/Commits is the
	// average group-commit size.
	Commits uint64
	Writes  uint64
}

// Stats counts sessions and chunks. It reads every session's chunk index, so
// it is for status reports, not hot paths.
func (s *Store) Stats() (Stats, error) {
	st := Stats{Commits: s.commits.Load(), Writes: s.writes.Load()}
	err := s.view(func(tx *bolt.Tx) error {
		st.HighWater = tx.Size()
		st.Sessions = tx.Bucket(bucketSessions).Stats().KeyN
		chunks := tx.Bucket(bucketChunks)
		return chunks.ForEachBucket(func(id []byte) error {
			// A chunk is a whole key or a part 0.
			return chunks.Bucket(id).ForEach(func(k, _ []byte) error {
				if len(k) == seqLen || (len(k) == partKeyLen && partIndex(k) == 0) {
					st.Chunks++
				}
				return nil
			})
		})
	})
	if err != nil {
		return Stats{}, err
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return Stats{}, fmt.Errorf("store stats: %w", err)
	}
	st.FileSize = fi.Size()
	return st, nil
}

// view runs fn in a read transaction, reporting a closed database as
// ErrClosed rather than bbolt's error.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	err := s.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func encodeSeq(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

// decodeSeq returns the seq of a chunk or part key.
func decodeSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// partKey returns the key of part i of chunk seq. Each call allocates: bbolt
// keeps the key until the transaction commits.
func partKey(seq uint64, i uint32) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, partKeyLen), seq)
	return binary.BigEndian.AppendUint32(k, i)
}

// partIndex returns the index of a part key.
func partIndex(k []byte) uint32 { return binary.BigEndian.Uint32(k[seqLen:]) }

// isChunkKey reports whether k, a key of a session's chunk bucket, holds
// chunk data: a whole chunk or a part, not the metadata.
func isChunkKey(k []byte) bool { return len(k) == seqLen || len(k) == partKeyLen }

// validate rejects what bbolt would reject inside the transaction, so that a
// bad request fails alone instead of failing the batch it was queued with.
func validate(id string, values ...[]byte) error {
	if id == "" {
		return errors.New("store: empty session id")
	}
	if len(id) > bolt.MaxKeySize {
		return fmt.Errorf("store: session id is %d bytes, limit is %d", len(id), bolt.MaxKeySize)
	}
	for _, v := range values {
		if len(v) > bolt.MaxValueSize {
			return fmt.Errorf("store: value is %d bytes, limit is %d", len(v), bolt.MaxValueSize)
		}
	}
	return nil
}

// Usage returns the bytes of the file's pages in use (the high-water mark
// less the pages free for reuse) and the file's size. The file never
// shrinks; what is deleted frees pages the next writes reuse, so a cap on
// used bytes also bounds the file, to within what one commit adds.
func (s *Store) Usage() (used, file int64, err error) {
	if used, err = s.Used(); err != nil {
		return 0, 0, err
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0, 0, fmt.Errorf("store usage: %w", err)
	}
	return used, fi.Size(), nil
}

// Used is Usage's bytes in use alone, cheap enough for every append: no
// system call, and bbolt's counts of free pages as of the last commit.
func (s *Store) Used() (int64, error) {
	var high int64
	if err := s.view(func(tx *bolt.Tx) error {
		high = tx.Size()
		return nil
	}); err != nil {
		return 0, err
	}
	st := s.db.Stats()
	free := int64(st.FreePageN+st.PendingPageN) * int64(s.db.Info().PageSize)
	return max(high-free, 0), nil
}
