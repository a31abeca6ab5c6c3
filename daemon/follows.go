package daemon

import (
	"sync"

	"github.com/orion-agent/orion/protocol"
)

// followCount counts each connection's trace.follow subscriptions: each
// holds an event buffer and goroutines until its connection closes, so
// without a bound one connection asking again and again grew the daemon
// by hundreds of megabytes. Usable as a zero value.
type followCount struct {
	mu sync.Mutex
	n  map[*conn]int
}

// add counts one more follow of conn, or refuses it with
// too_many_follows when conn has protocol.MaxFollowsPerConnection.
func (f *followCount) add(c *conn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[*conn]int{}
	}
	if f.n[c] >= protocol.MaxFollowsPerConnection {
		e := protocol.Errorf(protocol.CodeTooLarge, protocol.ReasonTooManyFollows,
			"this connection follows the trace %d times already, the most one may; a follow lasts until its connection closes: "+
				"follow with one filter that covers what you need, or open another connection", protocol.MaxFollowsPerConnection)
		e.Data.Method = protocol.MethodTraceFollow
		e.Data.Limit = protocol.MaxFollowsPerConnection
		return e
	}
	f.n[c]++
	return nil
}

// done forgets one follow of conn, once it closed.
func (f *followCount) done(c *conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[c]--; f.n[c] <= 0 {
		delete(f.n, c)
	}
}
