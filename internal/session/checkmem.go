package session

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// DefaultCheckMemoryBytes bounds the bytes that finalizes hold in memory
// at once to check their content (see checkWeight). Each finalize holds
// at most about three times ValidateMaxBytes; a burst of finalizes (every
// session of a busy daemon finishing together) takes turns instead of
// adding them all up.
const DefaultCheckMemoryBytes = 16 << 20

// checkBudget is the bytes of content checked in memory at once, shared
// by every finalize: one whose check would take the total over waits, in
// the order they came, until earlier ones are done.
type checkBudget struct {
	sem *semaphore.Weighted
	max int64
}

func newCheckBudget(max int64) checkBudget {
	if max <= 0 {
		max = DefaultCheckMemoryBytes
	}
	return checkBudget{sem: semaphore.NewWeighted(max), max: max}
}

// acquire waits until weight bytes are free (a weight over the whole
// budget takes all of it, and so runs alone), or ctx is done. It returns
// what release must give back.
func (b checkBudget) acquire(ctx context.Context, weight int64) (held int64, err error) {
	weight = min(weight, b.max)
	if weight <= 0 {
		return 0, nil
	}
	if err := b.sem.Acquire(ctx, weight); err != nil {
		return 0, err
	}
	return weight, nil
}

// release gives back what acquire took.
func (b checkBudget) release(held int64) {
	if held > 0 {
		b.sem.Release(held)
	}
}

// checkWeight is what a finalize of r holds in memory while it checks and
// writes: the content read from the journal and its repaired copy, and
// the file it replaces (at most the validation limit of it, see
// readTargetBounded). Content over the limit is streamed, unchecked.
func (m *Manager) checkWeight(r *record) int64 {
	size := r.contentBytes()
	if size > m.cfg.ValidateMaxBytes {
		return 0
	}
	return 2*size + min(r.BaseSize, m.cfg.ValidateMaxBytes)
}
