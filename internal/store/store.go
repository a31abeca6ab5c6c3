// Package store is oriond's durable journal: per session, an opaque
// metadata value and the session's content as numbered chunks.
//
// Every write returns only after it is on disk, so a caller may acknowledge
// data to its client as soon as a write returns. Writes from many goroutines
// are group-committed: whatever is queued while one commit is syncing goes
// into the next, so concurrent writers share the cost of the syncs instead
// of queueing behind each other.
//
// The package knows nothing about what sessions mean; ids, metadata and
// chunks are bytes to it.
//
// Two files hold a store: a bbolt file with the sessions, their metadata,
// the other concerns' buckets and an index of the chunks and of the content
// buckets' values, and a content log (package contentlog, in the directory
// next to it named like it with ".segments" added) with the bytes of those
// chunks and values, the way WiscKey-style stores keep keys in a tree and
// values in a log. The content buckets (contentBuckets: backups and
// checkpoint contents) are read and written through the same KV methods as
// any other bucket; their values are appended to the log, synced, and
// indexed by the commit of the write that stores them. A bbolt commit syncs twice (pages, then meta) and rewrites every page
// on the path to what it changed, 32 KB for a 4 KiB chunk; the log appends
// the chunk once and syncs once per group of appends.
//
// An Append is durable once its record is in the log: the record carries
// the session id, the seq, the chunk and the session's metadata, everything
// the Append wrote. Its index entry rides the next bbolt commit, which
// happens when any other write commits, when enough entries wait, or after
// Options.DeferDelay: an append costs one fdatasync of the log, shared with
// concurrent appends, and the index's two syncs are spread over hundreds of
// appends. The log calls back in log order as each group is synced, and the
// entries queue in that order, so each bbolt commit indexes every record up
// to some position of the log and records that position (meta/logpos). At
// Open, the records past it are replayed into the index (replay): they are
// the Appends whose entries a crash kept from being committed. LogMeta
// journals a session's metadata the same way, and the values of content
// buckets an Append or a LogMeta carries are records of its batch, indexed
// and replayed with it. Every other
// write (PutMeta, Finish, Delete...) commits the queued entries first, so no
// record past meta/logpos is older than a later write of its session. Until
// its commit has ended, an entry is also kept by session in memory (pending),
// where CopyRange finds the chunks of a session's last appends without
// making a commit of its own.
//
// Layout of the bbolt file:
//
//	meta/schema       -> schema version, 8 bytes big-endian
//	meta/logpos       -> segment and offset (8 bytes each, big-endian): every
//	                     record of the log before it is indexed
//	sessions/<id>     -> metadata
//	chunks/<id>/<seq> -> where chunk seq is in the log: the record's segment,
//	                     offset and length, and the chunk's offset and length
//	                     in the record; seq is 8 bytes big-endian so that
//	                     cursor order is sequence order
//	chunks/<id>/ff*9  -> metadata written by Append; where present it
//	                     supersedes sessions/<id>
//	<content bucket>/<key> -> where the value is in the log, encoded as a
//	                     chunk's index entry (values.go)
//
// Append keeps the metadata it rewrites with every chunk next to the
// chunks, in the leaf page the chunk dirties anyway, rather than in the
// sessions bucket: a commit of appends from many sessions then writes one
// leaf per session instead of also rewriting most of the sessions bucket.
// The key is nine bytes, so it sorts after every eight-byte seq and is never
// taken for a chunk. An Append without metadata (empty) leaves it as the
// last Append or PutMeta wrote it: a caller whose metadata changes only in
// what the chunks themselves tell (how many, how long) need not rewrite it
// with each one, and rebuilds those counts from the chunks after a crash.
//
// Segments of the log are reclaimed once no index entry, of a chunk or of a
// content bucket's value, points into them (reclaim.go); a segment that is
// mostly dead has its live records copied to the end of the log first, and
// the segment being appended to is rotated when it is mostly dead.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/internal/contentlog"

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
//
// Version 4 moved the chunks' bytes to the content log, leaving index
// entries in their place (see the package comment). Open migrates versions 1
// to 3 by moving their chunks (migrate); a version 3 build refuses a
// version 4 file, whose index entries it would serve as content.
//
// Version 5 moved the values of the content buckets (backups, checkpoint
// contents: see contentBuckets) to the content log the same way. Open
// migrates versions 1 to 4 by moving them, with the chunks of versions 1 to
// 3; a version 4 build refuses a version 5 file, whose index entries it
// would restore as a backup.
//
// Version 6 added records that wait in the content log for their index
// entries besides chunks: a session's metadata (LogMeta, a begin's and a
// finalize's record) and the values of content buckets an Append's batch
// carries (the backup of the file an overwrite replaces). A version 5 file
// holds none, so Open migrates it by replaying its log as a version 5 build
// would and rewriting the number; a version 5 build refuses a version 6
// file, whose waiting metadata records and backups it would skip, losing a
// finalize's record and the backup it carried.
const schemaVersion = 6

var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketChunks   = []byte("chunks")
	keySchema      = []byte("schema")
	keyLogPos      = []byte("logpos")
	// keyChunkMeta holds, in a session's chunk bucket, the metadata of its
	// last Append; see the package comment.
	keyChunkMeta = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
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

	// DeferDelay is the longest a deferred write (FinishLater, an Append's
	// index entry) waits for another commit to ride before it commits by
	// itself. 0 means 1s.
	DeferDelay time.Duration

	// SegmentSize is the size of the content log's segments. 0 means
	// contentlog.DefaultSegmentSize.
	SegmentSize int64

	// LogFault, for tests only, makes the content log's segment files
	// fail as it says (contentlog.Options.Fault): it is asked before each
	// write, sync and allocation.
	LogFault func(op string) error
	// commitFault, set by tests, is asked at the end of each transaction
	// of the committer; an error it returns fails that commit, as a
	// refused write of the bbolt file would.
	commitFault func() error
}

// Store is an open journal file. Its methods are safe for concurrent use.
type Store struct {
	path       string
	db         *bolt.DB
	maxBatch   int
	deferDelay time.Duration

	// updates counts twice each bbolt transaction of update (before it and
	// after it, committed or not: odd while one runs),
	// and tree is the bbolt file's bytes in use as Used last measured
	// them, with the count it measured them at: the file changes only in
	// such a transaction, so Used reads them once per commit, not once
	// per append.
	updates atomic.Uint64
	tree    atomic.Pointer[treeUse]

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
	// itx is what the index entries of the write transaction under way
	// share (indexTx): used only inside update's transactions, which
	// bbolt runs one at a time.
	itx indexTx

	// deferred are writes waiting to ride the next commit (writeLater);
	// deferTimer commits them if none comes in time. Both under deferMu.
	deferMu    sync.Mutex
	deferred   []*request
	deferTimer *time.Timer
	// closing, under deferMu, keeps requeue from arming deferTimer once
	// Close has begun its last commit.
	closing bool

	// lastBatch is the size of the last batch the committer committed.
	lastBatch atomic.Int32

	commits atomic.Uint64
	writes  atomic.Uint64

	// log holds the bytes of the chunks and the content buckets' values.
	log *contentlog.Log
	// live is the bytes of the log's records that the index points to,
	// or will once their entries commit: what --store-max-bytes counts.
	live atomic.Int64
	// deferredN and deferredBytes count the index entries among deferred
	// and their metadata, under deferMu; flushKicked is set while a commit
	// they asked for is on its way; bg counts those commits.
	deferredN     int
	deferredBytes int
	flushKicked   atomic.Bool
	// pending holds, by session, the index entries queued and not yet
	// through a commit, under deferMu: reads find the chunks of the last
	// appends there without making a commit of their own.
	pending map[string][]*request
	// indexQueued and indexDone count the index entries queued and those
	// whose commit has ended, so that a read knows whether to wait.
	indexQueued atomic.Uint64
	indexDone   atomic.Uint64
	bg          sync.WaitGroup

	// readMu is held for reading by whoever reads chunks through refs
	// copied out of a transaction, and for writing by reclaim while it
	// deletes segments, so that no read finds its segment gone.
	readMu sync.RWMutex
	// indexMu is held for reading by writes that index a record in a
	// commit of their own, from the log append to that commit, and for
	// writing by reclaim while it finds and deletes dead segments.
	indexMu sync.RWMutex
	// reclaiming is set while a reclaim pass runs; reclaimAgain asks it
	// for another pass.
	reclaiming   atomic.Bool
	reclaimAgain atomic.Bool
	reclaimDone  sync.WaitGroup
	// afterCompactCopy, set by tests, runs where a compaction has copied
	// chunks to the end of the log and not yet indexed the copies.
	afterCompactCopy func()

	// segSize is the log's segment size; segLive the live bytes of each
	// segment (as live is of all), under liveMu: they tell, without a
	// read of the index, when a reclaim pass has something to do.
	segSize     int64
	liveMu      sync.Mutex
	segLive     map[uint64]int64
	commitFault func() error // Options.commitFault

	// fence, when set, is a position meta/logpos must reach before the
	// log acknowledges anything more (fence.go).
	fence atomic.Pointer[contentlog.Pos]
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

	boltOpts := &bolt.Options{
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
	}
	db, err := bolt.Open(path, 0o600, boltOpts)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// A copy a compaction was writing when the daemon stopped (the lock
	// is ours: no one else is writing it).
	os.Remove(compactPath(path))
	version, err := readSchema(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	logDir := LogDir(path)
	if version > 0 && version < 4 {
		// A file older than the log has none: one there is what a
		// migration that did not finish left behind.
		if err := os.RemoveAll(logDir); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	log, err := contentlog.Open(logDir, contentlog.Options{SegmentSize: opts.SegmentSize, Fault: opts.LogFault})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	deferDelay := opts.DeferDelay
	if deferDelay <= 0 {
		deferDelay = defaultDeferDelay
	}
	segSize := opts.SegmentSize
	if segSize <= 0 {
		segSize = contentlog.DefaultSegmentSize
	}
	s := &Store{
		path:       path,
		db:         db,
		maxBatch:   maxBatch,
		deferDelay: deferDelay,
		reqs:       make(chan *request, maxBatch),
		done:       make(chan struct{}),
		log:        log,
		segSize:    segSize,

		commitFault: opts.commitFault,
	}
	switch {
	case version == 0:
		err = db.Update(func(tx *bolt.Tx) error {
			if err := createBuckets(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySchema, encodeSeq(schemaVersion))
		})
	case version < 4:
		if err = s.migrate(version); err == nil {
			err = s.compactFile(boltOpts)
		}
	case version < 5:
		// A version 4 file has a log whose chunks may wait to be
		// replayed: they are indexed first, as by a version 4 build.
		if err = s.replay(); err == nil {
			err = s.migrate(version)
		}
		if err == nil {
			err = s.compactFile(boltOpts)
		}
	case version < schemaVersion:
		// A version 5 file's log holds only the records a version 5
		// build replays (chunks), which replay indexes as it did. The
		// migration moves nothing out of the bbolt file, so it frees no
		// pages for compactFile to give back.
		if err = s.replay(); err == nil {
			err = s.migrate(version)
		}
	default:
		// A start killed before a migration's rewrite of the file left
		// it mostly free pages; this start rewrites it.
		if err = s.replay(); err == nil {
			err = s.compactFile(boltOpts)
		}
	}
	if err == nil {
		err = s.countLive()
	}
	if err != nil {
		log.Close()
		s.db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go s.commitLoop()
	s.reclaimSoon()
	return s, nil
}

// LogDir returns the directory of the content log of the store at path.
func LogDir(path string) string { return path + ".segments" }

// initialMmapSize is the address space bbolt maps at Open. See Open.
const initialMmapSize = 1 << 30

// readSchema returns the schema version of the file: 0 for a new file (no
// complete layout yet), 1 to schemaVersion for a file this build reads. A
// later version is an error.
func readSchema(db *bolt.DB) (uint64, error) {
	var version uint64
	err := db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return nil
		}
		v := meta.Get(keySchema)
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("schema version is %d bytes, want 8: not an oriond store", len(v))
		}
		got := binary.BigEndian.Uint64(v)
		if got < 1 || got > schemaVersion {
			return fmt.Errorf("schema version %d, this build reads versions up to %d: use a matching oriond or move the file aside", got, schemaVersion)
		}
		if tx.Bucket(bucketSessions) == nil || tx.Bucket(bucketChunks) == nil {
			if got == schemaVersion {
				return nil // a layout whose creation did not finish
			}
		}
		version = got
		return nil
	})
	return version, err
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
	s.deferMu.Lock()
	s.closing = true
	s.deferMu.Unlock()
	// Deferred writes are not given up at a graceful stop. Index entries
	// whose commit fails even now are indexed from the log at the next
	// Open.
	s.flushDeferred()
	s.bg.Wait()
	s.reclaimDone.Wait()
	err := s.db.Close()
	if lerr := s.log.Close(); err == nil {
		err = lerr
	}
	return err
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

	// Commits and Writes count, since Open, the bbolt transactions
	// committed and the writes they carried (index entries included).
	// Writes/Commits is the average group-commit size.
	Commits uint64
	Writes  uint64

	// Log is the content log's: records appended and the groups and
	// fdatasyncs that wrote them, and the bytes its segments hold.
	Log contentlog.Stats
	// LiveLogBytes is the bytes of the log's records that chunks use.
	LiveLogBytes int64
}

// Stats counts sessions and chunks. It reads every session's chunk index, so
// it is for status reports, not hot paths.
func (s *Store) Stats() (Stats, error) {
	st := Stats{Commits: s.commits.Load(), Writes: s.writes.Load(), Log: s.log.Stats(), LiveLogBytes: s.live.Load()}
	// Stats commits nothing, so that tests can count commits with it:
	// chunks whose index entries wait for a commit are counted apart.
	pending := s.pendingIndex()
	err := s.view(func(tx *bolt.Tx) error {
		st.HighWater = tx.Size()
		st.Sessions = tx.Bucket(bucketSessions).Stats().KeyN
		chunks := tx.Bucket(bucketChunks)
		seen := map[string]bool{}
		for _, p := range pending {
			if p.metaOnly {
				// A LogMeta's session, listed once its entry is
				// committed.
				if _, ok := lookup(tx.Bucket(bucketSessions), p.key); !ok && !seen[string(p.key)] {
					seen[string(p.key)] = true
					st.Sessions++
				}
				continue
			}
			k := string(p.key) + string(encodeSeq(p.seq))
			if seen[k] {
				continue
			}
			seen[k] = true
			if b := chunks.Bucket(p.key); b == nil || b.Get(encodeSeq(p.seq)) == nil {
				st.Chunks++
				if b == nil {
					if _, ok := lookup(tx.Bucket(bucketSessions), p.key); !ok && !seen[string(p.key)] {
						seen[string(p.key)] = true
						st.Sessions++
					}
				}
			}
		}
		return chunks.ForEachBucket(func(id []byte) error {
			return chunks.Bucket(id).ForEach(func(k, _ []byte) error {
				if isChunkKey(k) {
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

// decodeSeq returns the seq of a chunk key.
func decodeSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// isChunkKey reports whether k, a key of a session's chunk bucket, is a
// chunk's index entry, not the metadata.
func isChunkKey(k []byte) bool { return len(k) == seqLen }

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

// Usage returns the bytes in use (see Used) and the size of the files: the
// bbolt file's, plus the bytes of the log's records. The bbolt file never
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
	return used, fi.Size() + s.log.Stats().Bytes, nil
}

// Used is Usage's bytes in use alone, cheap enough for every append: no
// system call, bbolt's counts of free pages as of the last commit, and the
// bytes of the log's records that chunks use. Dead records still take disk
// until their segment is reclaimed (Usage's file size counts them).
//
// The bbolt part is measured again only after a commit: a read transaction
// per append was 6% of the daemon's CPU with 64 sessions appending.
func (s *Store) Used() (int64, error) {
	updates := s.updates.Load()
	if t := s.tree.Load(); t != nil && t.updates == updates {
		return t.used + s.live.Load(), nil
	}
	var high int64
	if err := s.view(func(tx *bolt.Tx) error {
		high = tx.Size()
		return nil
	}); err != nil {
		return 0, err
	}
	st := s.db.Stats()
	free := int64(st.FreePageN+st.PendingPageN) * int64(s.db.Info().PageSize)
	used := max(high-free, 0)
	// Counted before the transaction began: a commit since makes the
	// next call measure again. None is kept while an update runs (the
	// count is odd): its commit may take effect before the count moves.
	if updates%2 == 0 {
		s.tree.Store(&treeUse{updates: updates, used: used})
	}
	return used + s.live.Load(), nil
}

// treeUse is the bbolt file's bytes in use after a number of updates.
type treeUse struct {
	updates uint64
	used    int64
}
