package controller

import (
	"context"
	"sync"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// sender sends the active session's content in the background, one append
// at a time, so that reading the model's stream never waits for the
// daemon: text that arrives while an append is unanswered joins the next
// append (up to ChunkBytes), which goes out as soon as the reply comes. A
// model streaming a token per delta thus costs one append per round trip,
// not one per delta, and no delta waits more than one round trip.
//
// Only the plain path runs in the background: an append the daemon
// refused, or one lost with the connection, stops the sender, and the
// caller's goroutine sends that same chunk again through flush, with its
// reconnects, continuations and events. Everything else (marker lines,
// finalize, events) stays on the caller's goroutine, after settle.
type sender struct {
	// mu guards the session fields the background append reads and
	// writes: pend, lineStart, candidate (through sendable), nextSeq,
	// pendSince and retrySize.
	mu sync.Mutex
	// done is closed when the running background sender ends; nil when
	// none runs.
	done chan struct{}
}

// due reports whether s's pending content should go now: with FlushAfter
// unset, whenever there is any; with it set, once a chunk's worth is
// pending or the oldest pending byte is that old. Called with mu held.
func (c *Controller) due(s *session) bool {
	n := s.sendable()
	if n == 0 {
		return false
	}
	return c.opts.FlushAfter <= 0 || n >= c.opts.ChunkBytes || c.opts.Now().Sub(s.pendSince) >= c.opts.FlushAfter
}

// kick starts the background sender for s if content is due and no append
// is unanswered; otherwise the content waits for the next append, which
// the running sender sends when its reply comes. It reports whether flush
// must run on the caller's goroutine instead: a background append failed
// (its chunk is to be sent again), or the session needs what only flush
// does (continuing a truncated session, dropping a failed one's text).
func (c *Controller) kick(ctx context.Context, s *session) (flushNow bool) {
	c.send.mu.Lock()
	defer c.send.mu.Unlock()
	if c.send.done != nil {
		return false
	}
	if s.retrySize > 0 || s.failed || s.truncated {
		return s.retrySize > 0 || c.due(s)
	}
	if !c.due(s) {
		return false
	}
	done := make(chan struct{})
	c.send.done = done
	cli := c.cli
	go c.pump(ctx, cli, s, done)
	return false
}

// pump sends s's due content, one append at a time, until none is due or
// an append fails.
func (c *Controller) pump(ctx context.Context, cli *client.Client, s *session, done chan struct{}) {
	defer close(done)
	c.send.mu.Lock()
	defer c.send.mu.Unlock()
	for c.due(s) {
		size := c.chunkSize(s, s.sendable())
		// A copy: scan may append to pend while the append is out.
		chunk, seq := string(s.pend[:size]), s.nextSeq
		c.send.mu.Unlock()
		_, err := cli.Append(ctx, protocol.AppendParams{SessionID: s.id, Seq: seq, Chunk: chunk})
		c.send.mu.Lock()
		if err != nil {
			// flush sends exactly these bytes again with this seq: the
			// daemon acknowledges a repeated chunk only if it is the same.
			s.retrySize = size
			break
		}
		s.sent(size)
		s.nextSeq = seq + 1
		// As after a synchronous append: an idle prompt the daemon sent
		// before this ack is out of date.
		c.inbox.drop(protocol.NotifySessionIdle, s.id)
		if len(s.pend) > 0 {
			s.pendSince = c.opts.Now()
		}
	}
	c.send.done = nil
}

// settle waits until no append is unanswered, so the caller's goroutine
// may use the session and the connection on its own.
func (c *Controller) settle() {
	c.send.mu.Lock()
	done := c.send.done
	c.send.mu.Unlock()
	if done != nil {
		<-done
	}
}

// acknowledged waits for the background sender and, if its last append
// failed, sends that chunk again now (reconnecting if need be), so every
// chunk sent so far is acknowledged or its failure reported: a harness
// that cuts the connection next finds it in use, not already broken.
func (c *Controller) acknowledged(ctx context.Context) error {
	c.settle()
	if s := c.active(); s != nil && s.retrySize > 0 {
		return c.flush(ctx, s, false)
	}
	return nil
}

// chunkSize is how many of the first n pending bytes of s the next append
// takes: at most ChunkBytes, cut on a UTF-8 character boundary.
func (c *Controller) chunkSize(s *session, n int) int {
	size := min(n, c.opts.ChunkBytes)
	if size < n {
		if cut := client.CharBoundary(s.pend[:size]); cut > 0 {
			size = cut
		}
	}
	return size
}
