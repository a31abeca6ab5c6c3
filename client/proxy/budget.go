package proxy

import (
	"context"
	"sync"
)

// budget is a byte count shared by the requests in flight: each holds its
// body's size while it is served, so that many large bodies at once wait
// instead of adding up. Waiters are served in order; one that asks for
// more than is free holds the line, so a large body is not starved by a
// stream of small ones.
type budget struct {
	mu    sync.Mutex
	free  int64
	queue []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(n int64) *budget { return &budget{free: n} }

// acquire waits for n bytes (n is at most the budget's size) or for ctx.
func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if len(b.queue) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready:
			// Granted as ctx ended: give it back.
			b.free += n
			b.wakeLocked()
		default:
			for i, q := range b.queue {
				if q == w {
					b.queue = append(b.queue[:i], b.queue[i+1:]...)
					break
				}
			}
			b.wakeLocked()
		}
		return ctx.Err()
	}
}

// release returns n bytes.
func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	b.wakeLocked()
}

func (b *budget) wakeLocked() {
	for len(b.queue) > 0 && b.free >= b.queue[0].n {
		w := b.queue[0]
		b.queue = b.queue[1:]
		b.free -= w.n
		close(w.ready)
	}
}
