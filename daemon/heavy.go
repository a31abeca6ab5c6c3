package daemon

import (
	"context"
	"sync"
)

// Replies that may be megabytes (session.content, session.list,
// trace.list) are built in memory, marshalled, then copied into a frame,
// and a reply waits for the socket with all of that alive. Unbounded, a
// client that sends many such requests without reading took the daemon
// to gigabytes. The gate bounds them: at most one built or being written
// per connection, and maxHeavyReplies daemon-wide, each held from before
// the reply is built until it is written (or the write timed out, which
// closes the connection).
const maxHeavyReplies = 3

// heavyGate is usable as a zero value.
type heavyGate struct {
	mu     sync.Mutex
	global chan struct{}
	conns  map[*conn]*connSlot
}

// connSlot is one connection's slot and the requests that use or wait
// for it; it is dropped when none does.
type connSlot struct {
	ch    chan struct{}
	users int
}

// acquire waits for conn's slot and then a daemon-wide one. It returns
// false, holding nothing, when ctx (the request's, done when its
// connection closes) is done meanwhile: its reply could not be written
// anyway.
func (g *heavyGate) acquire(ctx context.Context, c *conn) (release func(), ok bool) {
	g.mu.Lock()
	if g.global == nil {
		g.global = make(chan struct{}, maxHeavyReplies)
		g.conns = map[*conn]*connSlot{}
	}
	slot := g.conns[c]
	if slot == nil {
		slot = &connSlot{ch: make(chan struct{}, 1)}
		g.conns[c] = slot
	}
	slot.users++
	global := g.global
	g.mu.Unlock()

	leave := func() {
		g.mu.Lock()
		if slot.users--; slot.users == 0 {
			delete(g.conns, c)
		}
		g.mu.Unlock()
	}
	select {
	case slot.ch <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, false
	}
	select {
	case global <- struct{}{}:
	case <-ctx.Done():
		<-slot.ch
		leave()
		return nil, false
	}
	return func() {
		<-global
		<-slot.ch
		leave()
	}, true
}
