package store

import (
	"errors"
	"log/slog"

	"github.com/orion-agent/orion/internal/contentlog"

	bolt "go.etcd.io/bbolt"
)

// After a write or sync of the log fails, the segment it was writing takes
// no more appends (contentlog.WriteError), but the records of the refused
// batch may have reached the disk, whole: recovery, reading past
// meta/logpos, would take them for Appends whose index entries a crash
// kept from being committed, and bring back chunks (and the metadata they
// carry) whose senders were told they were refused, maybe after the session
// had moved on. So the store fences them out: meta/logpos is moved to the
// start of the next segment, after the index entries of every record before
// the failed batch, which were all queued before it was written. The
// refusal is returned once that commit has been tried; until one has
// succeeded, every commit carries the fence and no new Append is written to
// the log. So a client told of a refusal can act on it (abort, finish, send
// something else) without a crash bringing the refused record back; an
// append whose outcome a crash kept from its client may be there or not,
// as always.

// fenceAfter fences out the records of the batch that err refused, if err
// is a failed write of the log, and tries to commit the fence at once.
func (s *Store) fenceAfter(err error) {
	var we *contentlog.WriteError
	if !errors.As(err, &we) {
		return
	}
	p := contentlog.Pos{Seg: we.Seg + 1}
	for {
		cur := s.fence.Load()
		if cur != nil && !cur.Less(p) {
			break
		}
		if s.fence.CompareAndSwap(cur, &p) {
			break
		}
	}
	if ferr := s.fenceFirst(); ferr != nil {
		slog.Error("store: recording that refused appends are not content failed; appends are refused until it succeeds", "err", ferr)
	}
}

// fenceFirst commits the fence, if one waits, before a write that the log
// would make durable: a crash after that write must not replay what was
// refused before it.
func (s *Store) fenceFirst() error {
	if s.fence.Load() == nil {
		return nil
	}
	// Any commit carries the fence (applyFence); an empty write makes
	// one.
	return s.write(func(tx *bolt.Tx) error { return nil })
}

// applyFence records the fence in tx, if one waits, and forgets it once tx
// has committed. The commit that calls it has taken the deferred index
// entries first, so every record before the fence is indexed by then.
func (s *Store) applyFence(tx *bolt.Tx) error {
	f := s.fence.Load()
	if f == nil {
		return nil
	}
	if err := setLogPos(tx, *f); err != nil {
		return err
	}
	tx.OnCommit(func() { s.fence.CompareAndSwap(f, nil) })
	return nil
}
