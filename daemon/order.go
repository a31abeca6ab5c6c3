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

// turn is one request's place in its session's queue.
type turn struct {
	o   *sessionOrder
	key string
	// wait is closed when the request before it is done; nil when there
	// was none.
	wait <-chan struct{}
	mine chan struct{}
}

// enqueue must be called in arrival order (from the connection's read
// loop). The caller waits on the turn's wait, when there is one, before
// handling, and calls done after.
func (o *sessionOrder) enqueue(key string) turn {
	mine := make(chan struct{})
	o.mu.Lock()
	prev := o.tails[key]
	o.tails[key] = mine
	o.mu.Unlock()
	return turn{o: o, key: key, wait: prev, mine: mine}
}

// done lets the session's next request go. A zero turn (a request about no
// session) has nothing to let go.
func (t turn) done() {
	if t.o == nil {
		return
	}
	t.o.mu.Lock()
	if t.o.tails[t.key] == t.mine {
		delete(t.o.tails, t.key)
	}
	t.o.mu.Unlock()
	close(t.mine)
}
