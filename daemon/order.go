package daemon

import "sync"

// sessionOrder runs requests for one session in the order they were read
// from the socket. Requests are handled on their own goroutines so one
// session's commit never stalls another's; without this, a client that
// pipelines seq 1, 2, 3 could see 2 handled before 1 and get a spurious gap.
//
// A request waits on a channel only when one of its session is ahead of
// it, and that channel is made then: a session's appends one after another
// (the usual stream) make none.
type sessionOrder struct {
	mu sync.Mutex
	// last numbers requests as enqueued.
	last uint64
	// tails holds the last request enqueued for each session with one
	// not done.
	tails map[string]uint64
	// next holds, by a request's number, the channel the request after
	// it in its session waits on.
	next map[uint64]chan struct{}
}

func newSessionOrder() *sessionOrder {
	return &sessionOrder{tails: make(map[string]uint64), next: make(map[uint64]chan struct{})}
}

// turn is one request's place in its session's queue.
type turn struct {
	o   *sessionOrder
	key string
	n   uint64
	// wait is closed when the request before it is done; nil when there
	// was none.
	wait <-chan struct{}
}

// enqueue must be called in arrival order (from the connection's read
// loop). The caller waits on the turn's wait, when there is one, before
// handling, and calls done after.
func (o *sessionOrder) enqueue(key string) turn {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last++
	t := turn{o: o, key: key, n: o.last}
	if prev, ok := o.tails[key]; ok {
		wait := make(chan struct{})
		o.next[prev] = wait
		t.wait = wait
	}
	o.tails[key] = t.n
	return t
}

// done lets the session's next request go. A zero turn (a request about no
// session) has nothing to let go.
func (t turn) done() {
	if t.o == nil {
		return
	}
	t.o.mu.Lock()
	if t.o.tails[t.key] == t.n {
		delete(t.o.tails, t.key)
	}
	next := t.o.next[t.n]
	delete(t.o.next, t.n)
	t.o.mu.Unlock()
	if next != nil {
		close(next)
	}
}
