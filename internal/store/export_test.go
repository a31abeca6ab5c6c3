package store

import bolt "go.etcd.io/bbolt"

// Write queues apply as a write of its own, for tests of the committer.
func Write(s *Store, apply func(tx *bolt.Tx) error) error { return s.write(apply) }

// HoldCommits keeps the store from committing until release is called, so
// that a test can queue writes into one batch.
func HoldCommits(s *Store) (release func()) {
	s.commitMu.Lock()
	return s.commitMu.Unlock
}

// Queued returns the number of writes waiting for the committer.
func Queued(s *Store) int { return len(s.reqs) }

// PageAllocBytes returns the bytes of pages bbolt has allocated since Open:
// every page a commit writes, the meta page aside.
func PageAllocBytes(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetPageAlloc()
}

// WaitReclaim waits until no reclaim pass runs.
func WaitReclaim(s *Store) { s.reclaimDone.Wait() }

// AfterCompactCopy makes fn run where a compaction has copied live chunks
// to the end of the log and not yet pointed the index at the copies.
func AfterCompactCopy(s *Store, fn func()) { s.afterCompactCopy = fn }

// WithLogFaults makes the content log's files fail as fault says: it is
// asked before each write, sync and allocation (contentlog.Options.Fault).
func WithLogFaults(opts Options, fault func(op string) error) Options {
	opts.LogFault = fault
	return opts
}

// WithCommitFaults makes the committer's transactions fail where fault
// returns an error: it is asked at the end of each one.
func WithCommitFaults(opts Options, fault func() error) Options {
	opts.commitFault = fault
	return opts
}

// SchemaVersion is the version of the files this build writes.
const SchemaVersion = schemaVersion

// UsedOnCommit commits a transaction that applies fn and returns what Used
// reports once the commit took effect, before the transaction's update
// call returned.
func UsedOnCommit(s *Store, fn func(tx *bolt.Tx) error) (used int64, err error) {
	uerr := s.update(func(tx *bolt.Tx) error {
		tx.OnCommit(func() { used, err = s.Used() })
		return fn(tx)
	})
	if uerr != nil {
		return 0, uerr
	}
	return used, err
}

// WaitKickedFlushes waits for the commits that deferred index entries over
// their count or size limit have started.
func WaitKickedFlushes(s *Store) { s.bg.Wait() }

// MaxDeferredBytes is the metadata of deferred index entries at which they
// commit without waiting.
const MaxDeferredBytes = maxDeferredBytes
