package daemon

import "sync"

// DefaultMaxInflightTotalBytes bounds the frame bytes of requests read and
// not yet answered across every connection. Each connection has its own
// bound (DefaultMaxInflightBytes), but a client with a thousand
// connections would multiply it: this one keeps the daemon's memory
// bounded whatever the number of connections. A connection that finds it
// used up stops being read until replies free some of it.
const DefaultMaxInflightTotalBytes = 256 << 20

// byteBudget is a daemon-wide count of bytes held by requests in flight.
// One request is always let in when nothing is held, so a message of the
// largest allowed size can never wait forever.
type byteBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	// freed is closed, and replaced, whenever bytes are given back: a
	// broadcast to every connection waiting for room.
	freed chan struct{}
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit, freed: make(chan struct{})}
}

// take counts n bytes if they fit, else returns a channel that is closed
// the next time bytes are given back.
func (b *byteBudget) take(n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == 0 || b.used+n <= b.limit {
		b.used += n
		return true, nil
	}
	return false, b.freed
}

// give uncounts n bytes and wakes the waiters.
func (b *byteBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes counted now.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
