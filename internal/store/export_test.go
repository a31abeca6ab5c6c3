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
