package daemon

import (
	"context"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

// A session's requests are served in the order they were read (turn), but
// an append lets the session's next request go as soon as its chunk is
// queued for the journal, before the journal's sync: a client that sends
// the next chunk before this one's reply (orionctl write) then has both
// journaled in one sync. The engine says when (session.Orderer); the
// request's context carries the way to tell the request's turn.

// orderedKey is the context key of the request being served, an Orderer.
type orderedKey struct{}

// turnContext is a request's context that knows the request, without a
// context.WithValue allocated per request.
type turnContext struct {
	context.Context
	r *served
}

func (c *turnContext) Value(key any) any {
	if key == (orderedKey{}) {
		return c.r
	}
	return c.Context.Value(key)
}

// orderer returns the Orderer of the request ctx serves, or nil.
func orderer(ctx context.Context) session.Orderer {
	if r, ok := ctx.Value(orderedKey{}).(*served); ok {
		return r
	}
	return nil
}

// Ordered lets the session's next request go (session.Orderer).
func (r *served) Ordered() { r.releaseTurn() }

// releaseTurn lets the session's next request go, once.
func (r *served) releaseTurn() {
	if !r.turnReleased {
		r.turnReleased = true
		r.turn.done()
	}
}

// pipelinedChunk is the size from which an append is served on a goroutine
// of its own even when nothing else of its connection waits: its client
// sends the next chunk before this one's reply, and the read loop must be
// free to read it while this one syncs, so that the two share the sync.
// Next to a chunk that size, the goroutine costs nothing.
const pipelinedChunk = 64 << 10

// pipelined reports whether params are an append of a chunk that large.
func pipelined(params any) bool {
	p, ok := params.(*protocol.AppendParams)
	return ok && len(p.Chunk) >= pipelinedChunk
}
