package daemon

import "sync"

// sessionOrder runs requests for one session in the order they were read
// from the socket. Requests are handled on their own goroutines so one
// session's commit never stalls another's; without this, a client that
// pipelines seq 1, 2, 3 could see 2 handled before 1 and get a spurious gap.
type sessionOrder struct {
	mu    sync.Mutex
	tails map[string]chan struct{}
}

func newSessionOrder() *sessionOrder {
	return &sessionOrder{tails: make(map[string]chan struct{})}
}

// enqueue must be called in arrival order (from the connection's read
// loop). The caller waits on wait before handling and calls done after.
func (o *sessionOrder) enqueue(key string) (wait <-chan struct{}, done func()) {
	mine := make(chan struct{})
	o.mu.Lock()
	prev, ok := o.tails[key]
	o.tails[key] = mine
	o.mu.Unlock()
	if !ok {
		ready := make(chan struct{})
		close(ready)
		prev = ready
	}
	return prev, func() {
		o.mu.Lock()
		if o.tails[key] == mine {
			delete(o.tails, key)
		}
		o.mu.Unlock()
		close(mine)
	}
}
