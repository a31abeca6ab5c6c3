package daemon

import (
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// followCount counts each connection's trace.follow subscriptions: each
// holds an event buffer and goroutines until its connection closes, so
// without a bound one connection asking again and again grew the daemon
// by hundreds of megabytes. Usable as a zero value.
type followCount struct {
	mu sync.Mutex
	n  map[*jsonrpc2.Conn]int
}

// add counts one more follow of conn, or refuses it with
// too_many_follows when conn has protocol.MaxFollowsPerConnection.
func (f *followCount) add(conn *jsonrpc2.Conn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[*jsonrpc2.Conn]int{}
	}
	if f.n[conn] >= protocol.MaxFollowsPerConnection {
		e := protocol.Errorf(protocol.CodeTooLarge, protocol.ReasonTooManyFollows,
			"this connection follows the trace %d times already, the most one may; a follow lasts until its connection closes: "+
				"follow with one filter that covers what you need, or open another connection", protocol.MaxFollowsPerConnection)
		e.Data.Method = protocol.MethodTraceFollow
		e.Data.Limit = protocol.MaxFollowsPerConnection
		return e
	}
	f.n[conn]++
	return nil
}

// done forgets one follow of conn, once it closed.
func (f *followCount) done(conn *jsonrpc2.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[conn]--; f.n[conn] <= 0 {
		delete(f.n, conn)
	}
}
