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
	// byConn is conns the other way round, for the idle check.
	byConn map[*jsonrpc2.Conn]map[string]struct{}
	log    *slog.Logger
}

func newOwners(log *slog.Logger) *owners {
	return &owners{conns: make(map[string]*jsonrpc2.Conn), byConn: make(map[*jsonrpc2.Conn]map[string]struct{}), log: log}
}

func (o *owners) claim(sessionID string, conn *jsonrpc2.Conn) {
	if sessionID == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev := o.conns[sessionID]; prev != nil && prev != conn {
		delete(o.byConn[prev], sessionID)
		if len(o.byConn[prev]) == 0 {
			delete(o.byConn, prev)
		}
	}
	o.conns[sessionID] = conn
	ids := o.byConn[conn]
	if ids == nil {
		ids = make(map[string]struct{})
		o.byConn[conn] = ids
	}
	ids[sessionID] = struct{}{}
}

// drives reports whether conn drives a session that unfinished says is
// not finished.
func (o *owners) drives(conn *jsonrpc2.Conn, unfinished func(id string) bool) bool {
	o.mu.Lock()
	ids := make([]string, 0, len(o.byConn[conn]))
	for id := range o.byConn[conn] {
		ids = append(ids, id)
	}
	o.mu.Unlock()
	for _, id := range ids {
		if unfinished(id) {
			return true
		}
	}
	return false
}

// drop forgets a closed connection's sessions; they keep running and a
// client that reconnects claims them again with its next call.
func (o *owners) drop(conn *jsonrpc2.Conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.byConn[conn] {
		if o.conns[id] == conn {
			delete(o.conns, id)
		}
	}
	delete(o.byConn, conn)
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
