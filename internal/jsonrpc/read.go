package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// A Call waiting alone reads its own reply. Handed over by jsonrpc2's read
// loop, a reply cost a second goroutine woken after the first (the read
// loop's, then the caller's), the runtime waking a spare thread for it,
// and one more read that found the socket empty, all between the daemon's
// reply and the client's next request: for a client that sends one chunk
// at a time, time added to every sync. So, on a connection given to the
// codec (Conn):
//
//   - Whoever reads frames holds reading: the read loop, or a Call's Wait.
//   - A Call that is the only one waiting takes reading if no one holds it,
//     reads until its reply, settles the replies of Calls sent meanwhile as
//     the read loop does, and keeps what is jsonrpc2's (notifications, the
//     replies to its own requests) for the read loop, which it wakes.
//   - The read loop, once it settled the last Call waiting, leaves reading
//     to the Calls (yielded): a client that sends its next request as
//     soon as it has a reply finds the socket free to read. It reads again
//     when a Call leaves others waiting, when jsonrpc2 sends a request of
//     its own, or when no Call has read for yieldFor (resume), so that a
//     notification to an idle client waits at most that long.
//
// A Call reading with a context that may end stops at its end: the
// connection's read deadline is set to the past while the Call waits for
// the next frame, never in the middle of one (a frame cut short would
// leave the stream unreadable).
type reader struct {
	// conn is the connection, given by Conn: without it (a codec on a
	// stream of its own) only the read loop reads.
	conn net.Conn
	// stream is jsonrpc2's reader of the connection, known from the
	// first ReadObject.
	stream *bufio.Reader
	// reading: someone reads frames (and owns stream and the codec's
	// body); by is the Call that does, nil for the read loop, and byDone
	// the Done channel of its context.
	reading bool
	by      *Call
	byDone  <-chan struct{}
	// yielded: the read loop leaves reading to the Calls. lastRead is when
	// a Call last stopped reading; resumer takes reading back yieldFor
	// after it.
	yielded  bool
	lastRead time.Time
	resumer  *time.Timer
	// inbox holds what Calls read for jsonrpc2, copies, in order; ended
	// the error that ended the connection, for the read loop to return.
	inbox [][]byte
	ended error
	// wake (capacity 1) tells the read loop to look again.
	wake chan struct{}
	// watched is the Done channel of the context whose end interrupts a
	// Call's read (watch), unwatch the end of that.
	watched <-chan struct{}
	unwatch func() bool
	// interrupted: the read deadline is set to stop a Call's read;
	// framing: a frame is being read, which no deadline may cut.
	interrupted, framing bool
	// ownReads counts the replies read by their own Call, for tests.
	ownReads int
}

// yieldFor is how long the read loop leaves reading to the Calls after one
// last read: a notification to an idle client waits at most that long, and
// a client that calls more often than that never hands a reply over.
const yieldFor = 20 * time.Millisecond

// longAgo is a read deadline that has passed.
var longAgo = time.Unix(1, 0)

// Conn returns conn to give jsonrpc2.NewBufferedStream with this codec: a
// Call waiting alone then reads its own reply from it (reader), and
// closing it ends the codec's reading.
func (c *ClientCodec) Conn(conn net.Conn) net.Conn {
	c.mu.Lock()
	c.rd.conn = conn
	c.mu.Unlock()
	return &codecConn{Conn: conn, c: c}
}

// codecConn is a connection read by its codec's Calls as well as by
// jsonrpc2's read loop.
type codecConn struct {
	net.Conn
	c *ClientCodec
}

// Close closes the connection, tells a read loop waiting for a Call to
// read that none will, and fails the Calls waiting: jsonrpc2 closes it
// when its read loop has ended (a frame it cannot read), and then no one
// is left to read their replies or to end them.
func (cc *codecConn) Close() error {
	err := cc.Conn.Close()
	c := cc.c
	c.mu.Lock()
	if c.rd.ended == nil {
		c.rd.ended = net.ErrClosed
	}
	c.wakeLoop()
	c.mu.Unlock()
	c.endCalls()
	return err
}

// wakeLoop tells the read loop to look again; c.mu held.
func (c *ClientCodec) wakeLoop() {
	select {
	case c.rd.wake <- struct{}{}:
	default:
	}
}

// loopFrame is the read loop's next frame: one a Call read for it (held
// false), or one it read itself, its reading still held until doneWith;
// none (more) when it settled a Call's reply instead.
func (c *ClientCodec) loopFrame(stream *bufio.Reader) (body []byte, held, more bool, err error) {
	c.mu.Lock()
	c.rd.stream = stream
	for {
		if len(c.rd.inbox) > 0 {
			body := c.rd.inbox[0]
			c.rd.inbox[0] = nil
			c.rd.inbox = c.rd.inbox[1:]
			c.mu.Unlock()
			return body, false, false, nil
		}
		if err := c.rd.ended; err != nil {
			c.mu.Unlock()
			c.endCalls()
			return nil, false, false, err
		}
		if !c.rd.reading && !c.rd.yielded {
			break
		}
		c.mu.Unlock()
		<-c.rd.wake
		c.mu.Lock()
	}
	c.rd.reading, c.rd.by = true, nil
	c.mu.Unlock()
	for {
		body, err := c.readFrame(stream)
		if err != nil {
			c.endCalls()
			c.doneWith()
			return nil, false, false, err
		}
		if _, reply := c.settle(body); !reply {
			return body, true, false, nil
		}
		c.mu.Lock()
		if len(c.calls) == 0 && c.rd.conn != nil {
			// The next Call may read its own reply.
			c.rd.reading = false
			c.yieldLocked()
			c.mu.Unlock()
			return nil, false, true, nil
		}
		c.mu.Unlock()
	}
}

// doneWith ends the read loop's reading.
func (c *ClientCodec) doneWith() {
	c.mu.Lock()
	c.rd.reading = false
	c.mu.Unlock()
}

// yieldLocked leaves reading to the Calls until resume; c.mu held.
func (c *ClientCodec) yieldLocked() {
	c.rd.yielded = true
	c.rd.lastRead = time.Now()
	if c.rd.resumer == nil {
		c.rd.resumer = time.AfterFunc(yieldFor, c.resume)
	} else {
		c.rd.resumer.Reset(yieldFor)
	}
}

// resume gives reading back to the read loop once no Call has read for
// yieldFor.
func (c *ClientCodec) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.rd.yielded {
		return
	}
	if idle := time.Since(c.rd.lastRead); idle < yieldFor {
		c.rd.resumer.Reset(yieldFor - idle)
		return
	}
	c.rd.yielded = false
	c.wakeLoop()
}

// unyieldLocked has the read loop read again now (a request of jsonrpc2's
// own awaits its reply); c.mu held.
func (c *ClientCodec) unyieldLocked() {
	if c.rd.yielded {
		c.rd.yielded = false
		c.wakeLoop()
	}
}

// readOwn reads frames for k, sent and waiting alone, until its reply,
// if no one else reads: it reports whether it did (k's done then has its
// outcome), or that it gave k up because ctx ended first (as Wait gives a
// call up).
func (c *ClientCodec) readOwn(ctx context.Context, k *Call) (read, gaveUp bool) {
	done := ctx.Done()
	c.mu.Lock()
	if c.rd.reading || c.rd.conn == nil || c.rd.stream == nil || c.closed ||
		len(c.calls) != 1 || c.calls[k.id] != k || ctx.Err() != nil {
		if !c.rd.reading {
			// k waits for its reply to be handed over: the read loop
			// reads it.
			c.unyieldLocked()
		}
		c.mu.Unlock()
		return false, false
	}
	c.rd.reading, c.rd.by, c.rd.byDone = true, k, done
	stream := c.rd.stream
	c.watch(ctx)
	c.mu.Unlock()

	cut := c.readUntil(stream, done, k)

	c.mu.Lock()
	if c.rd.interrupted {
		c.rd.conn.SetReadDeadline(time.Time{})
		c.rd.interrupted = false
	}
	c.rd.reading, c.rd.by, c.rd.byDone = false, nil, nil
	if cut && c.calls[k.id] == k {
		// Given up on, as Wait gives up: a reply to its id may still
		// come, so the id is never reused.
		delete(c.calls, k.id)
		k.lost = true
		gaveUp = true
	} else if !cut && !c.closed {
		c.rd.ownReads++
	}
	if len(c.calls) > 0 {
		// Calls sent meanwhile wait for a reader.
		c.rd.yielded = false
	}
	if !c.rd.yielded || len(c.rd.inbox) > 0 || c.rd.ended != nil {
		c.wakeLoop()
	}
	c.rd.lastRead = time.Now()
	c.mu.Unlock()
	return !gaveUp, gaveUp
}

// readUntil reads frames from stream, reading held, until k's reply is settled or the
// connection ends (k's done then has its outcome), or until done is
// closed: it then reports true.
func (c *ClientCodec) readUntil(stream *bufio.Reader, done <-chan struct{}, k *Call) bool {
	for {
		// Waiting for the next frame is the part a context's end may
		// cut short: nothing of the frame is taken yet.
		if _, err := stream.Peek(1); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && closed(done) {
				return true
			}
			c.fail(err)
			return false
		}
		c.mu.Lock()
		c.rd.framing = true
		if c.rd.interrupted {
			c.rd.conn.SetReadDeadline(time.Time{})
			c.rd.interrupted = false
		}
		c.mu.Unlock()
		body, err := c.readFrame(stream)
		c.mu.Lock()
		c.rd.framing = false
		c.mu.Unlock()
		if err != nil {
			c.fail(err)
			return false
		}
		settled, reply := c.settle(body)
		if settled == k {
			return false
		}
		if !reply {
			c.mu.Lock()
			c.rd.inbox = append(c.rd.inbox, bytes.Clone(body))
			c.wakeLoop()
			c.mu.Unlock()
		}
		if closed(done) {
			return true
		}
	}
}

func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// fail ends the connection after a Call's read failed: the Calls waiting
// fail, and the read loop returns err to jsonrpc2.
func (c *ClientCodec) fail(err error) {
	c.endCalls()
	c.mu.Lock()
	if c.rd.ended == nil {
		c.rd.ended = err
	}
	c.mu.Unlock()
}

// watch has the end of ctx interrupt a Call reading for it: one context
// watched at a time, the last one a Call read with (a client uses one for
// a whole stream), so that a call does not register with its context
// anew; c.mu held.
func (c *ClientCodec) watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == c.rd.watched {
		return
	}
	if c.rd.unwatch != nil {
		c.rd.unwatch()
	}
	c.rd.watched = done
	c.rd.unwatch = context.AfterFunc(ctx, func() { c.interrupt(done) })
}

// interrupt stops the wait for a frame of a Call reading with the context
// whose Done is done, which ended.
func (c *ClientCodec) interrupt(done <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rd.reading && c.rd.by != nil && c.rd.byDone == done && !c.rd.framing && !c.rd.interrupted {
		c.rd.conn.SetReadDeadline(longAgo)
		c.rd.interrupted = true
	}
}
