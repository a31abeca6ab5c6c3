package jsonrpc

import "sync"

// Budget is a daemon-wide count of bytes held by requests in flight.
// One request is always let in when nothing is held, so a message of the
// largest allowed size can never wait forever.
type Budget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	// freed is closed, and replaced, whenever bytes are given back while
	// a connection waits for room (waited): a broadcast to every one of
	// them. Without waiters it stays, so that a reply costs no channel.
	freed  chan struct{}
	waited bool
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit, freed: make(chan struct{})}
}

// take counts n bytes if they fit, else returns a channel that is closed
// the next time bytes are given back.
func (b *Budget) take(n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == 0 || b.used+n <= b.limit {
		b.used += n
		return true, nil
	}
	b.waited = true
	return false, b.freed
}

// give uncounts n bytes and wakes the waiters.
func (b *Budget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.waited {
		close(b.freed)
		b.freed, b.waited = make(chan struct{}), false
	}
	b.mu.Unlock()
}

// inUse is the bytes counted now.
func (b *Budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
