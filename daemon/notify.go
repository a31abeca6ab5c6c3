package daemon

import (
	"log/slog"
	"sync"
)

// owners remembers which connection drives each session (the last one that
// began, appended to, resumed or continued it), so notifications such as
// session.idle reach the client that can act on them.
type owners struct {
	mu    sync.Mutex
	conns map[string]*conn
	// byConn is conns the other way round, for the idle check.
	byConn map[*conn]map[string]struct{}
	log    *slog.Logger
}

func newOwners(log *slog.Logger) *owners {
	return &owners{conns: make(map[string]*conn), byConn: make(map[*conn]map[string]struct{}), log: log}
}

func (o *owners) claim(sessionID string, c *conn) {
	if sessionID == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev := o.conns[sessionID]; prev != nil && prev != c {
		delete(o.byConn[prev], sessionID)
		if len(o.byConn[prev]) == 0 {
			delete(o.byConn, prev)
		}
	}
	o.conns[sessionID] = c
	ids := o.byConn[c]
	if ids == nil {
		ids = make(map[string]struct{})
		o.byConn[c] = ids
	}
	ids[sessionID] = struct{}{}
}

// drives reports whether conn drives a session that unfinished says is
// not finished.
func (o *owners) drives(c *conn, unfinished func(id string) bool) bool {
	o.mu.Lock()
	ids := make([]string, 0, len(o.byConn[c]))
	for id := range o.byConn[c] {
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
func (o *owners) drop(c *conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.byConn[c] {
		if o.conns[id] == c {
			delete(o.conns, id)
		}
	}
	delete(o.byConn, c)
}

// notify sends a notification to the session's client, if it has one. It
// never blocks the caller: the engine calls it with a session locked.
func (o *owners) notify(sessionID, method string, params any) {
	o.mu.Lock()
	c := o.conns[sessionID]
	o.mu.Unlock()
	if c == nil {
		o.log.Debug("no client to notify", "session", sessionID, "method", method)
		return
	}
	go func() {
		if err := c.notify(method, params); err != nil {
			o.log.Debug("notifying", "session", sessionID, "method", method, "err", err)
		}
	}()
}
