package daemon

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// owners remembers which connection drives each session (the last one that
// began, appended to, resumed or continued it), so notifications such as
// session.idle reach the client that can act on them.
type owners struct {
	mu    sync.Mutex
	conns map[string]*jsonrpc2.Conn
	log   *slog.Logger
}

func newOwners(log *slog.Logger) *owners {
	return &owners{conns: make(map[string]*jsonrpc2.Conn), log: log}
}

func (o *owners) claim(sessionID string, conn *jsonrpc2.Conn) {
	if sessionID == "" {
		return
	}
	o.mu.Lock()
	o.conns[sessionID] = conn
	o.mu.Unlock()
}

// drop forgets a closed connection's sessions; they keep running and a
// client that reconnects claims them again with its next call.
func (o *owners) drop(conn *jsonrpc2.Conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, c := range o.conns {
		if c == conn {
			delete(o.conns, id)
		}
	}
}

// notify sends a notification to the session's client, if it has one. It
// never blocks the caller: the engine calls it with a session locked.
func (o *owners) notify(sessionID, method string, params any) {
	o.mu.Lock()
	conn := o.conns[sessionID]
	o.mu.Unlock()
	if conn == nil {
		o.log.Debug("no client to notify", "session", sessionID, "method", method)
		return
	}
	go func() {
		if err := conn.Notify(context.Background(), method, params); err != nil {
			o.log.Debug("notifying", "session", sessionID, "method", method, "err", err)
		}
	}()
}
