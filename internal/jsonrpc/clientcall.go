package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sourcegraph/jsonrpc2"
)

// Call is one request whose reply the codec reads itself. jsonrpc2 writes
// the request, under its send lock, as a notification to which the codec
// gives an id (Send); the reply never reaches jsonrpc2, which would decode
// it twice with encoding/json into generic values, copy its result and
// keep the call in a map of its own, and the caller decodes the result
// once, into its own type. A Call is reused (NewCall, Release): a client
// sending one append after another allocates nothing for the call, its
// params or its reply. Methods of one Call are not for concurrent use.
type Call struct {
	codec *ClientCodec
	id    uint64
	// pick gives the request this call's id; made once per Call.
	pick jsonrpc2.CallOption
	// params is what WriteObject writes as the request's params while
	// Send runs, and content what it writes raw after them (SendRaw).
	params  []byte
	content []byte
	// done receives one value when the reply was read (or the
	// connection ended), result or err set before.
	done   chan struct{}
	result []byte
	err    error
	// lost is a call Wait gave up on (its context ended) or Send could
	// not send: a reply to its id may still come, so the id is never
	// reused.
	lost bool

	// Buf is room for the caller to encode the params in: it stays with
	// the Call, and with the call after it that reuses the Call.
	Buf []byte
}

// Bounds on what the codec keeps between calls: a Call's buffers, the
// Calls set aside for reuse, a connection's buffer for the frames it reads
// and the one for those it writes. The buffer of a streamed chunk of the
// usual size (client.DefaultChunkSize, 64 KiB, an eighth more when
// quoted) is kept; a rare large request or reply (a whole file, a
// session's content) is not held for the small ones after it.
const (
	maxKeptBuffer = 128 << 10
	maxFreeCalls  = 16
)

var errNotHooked = errors.New("jsonrpc: a Call needs the codec's OnSend on its Conn; nothing was sent")

// callIDs is where the ids of Calls start: far above the ones jsonrpc2
// numbers the connection's other calls with (from 0), so that the two
// never meet.
const callIDs = 1 << 48

// NewCall returns a Call ready to Send, a new one or one released before.
func (c *ClientCodec) NewCall() *Call {
	c.mu.Lock()
	if n := len(c.free); n > 0 {
		k := c.free[n-1]
		c.free = c.free[:n-1]
		c.mu.Unlock()
		return k
	}
	c.mu.Unlock()
	id := c.ids.Add(1)
	return &Call{codec: c, id: id, pick: jsonrpc2.PickID(jsonrpc2.ID{Num: id}), done: make(chan struct{}, 1)}
}

// Send writes the request of method with params (one JSON value, nil for
// none) through conn, the jsonrpc2.Conn of the codec, and returns once it
// is written: params may be reused then. The reply is Wait's.
func (k *Call) Send(ctx context.Context, conn *jsonrpc2.Conn, method string, params []byte) error {
	return k.send(ctx, conn, method, params, nil)
}

// SendRaw is Send of a request whose content goes raw after the JSON of
// its params, in the same frame (protocol.HeaderRawLength): params, one
// JSON object, leave out the field content stands for. content is written
// from where it is, never copied into a frame, and may be reused once
// SendRaw returns. Send it only to a daemon that takes it
// (protocol.FeatureRawContent).
func (k *Call) SendRaw(ctx context.Context, conn *jsonrpc2.Conn, method string, params, content []byte) error {
	if content == nil {
		content = []byte{}
	}
	return k.send(ctx, conn, method, params, content)
}

// send is Send, with content sent raw when it is not nil.
func (k *Call) send(ctx context.Context, conn *jsonrpc2.Conn, method string, params, content []byte) error {
	c := k.codec
	c.mu.Lock()
	if !c.hooked {
		c.mu.Unlock()
		return errNotHooked
	}
	if c.closed {
		c.mu.Unlock()
		return jsonrpc2.ErrClosed
	}
	k.params, k.content = params, content
	c.calls[k.id] = k
	c.mu.Unlock()
	err := conn.Notify(ctx, method, nil, k.pick)
	c.mu.Lock()
	k.params, k.content = nil, nil
	if err != nil {
		// Not sent, or not whole: a reply it may still get is dropped,
		// as the connection's end would drop it.
		delete(c.calls, k.id)
		k.lost = true
	}
	c.mu.Unlock()
	return err
}

// Wait waits for the reply of a sent call and returns its result as sent
// (valid until Release), or the error it carries as a *jsonrpc2.Error.
// jsonrpc2.ErrClosed means the connection ended first; ctx's error that
// ctx ended first, the reply not come.
func (k *Call) Wait(ctx context.Context) (json.RawMessage, error) {
	if read, gaveUp := k.codec.readOwn(ctx, k); gaveUp {
		return nil, ctx.Err()
	} else if read {
		<-k.done
		if k.err != nil {
			return nil, k.err
		}
		return k.result, nil
	}
	select {
	case <-k.done:
	case <-ctx.Done():
		if k.forget() {
			return nil, ctx.Err()
		}
		// The reply came meanwhile.
		<-k.done
	}
	if k.err != nil {
		return nil, k.err
	}
	return k.result, nil
}

// forget stops waiting for the reply, reporting false if it was already
// read.
func (k *Call) forget() bool {
	c := k.codec
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls[k.id] != k {
		return false
	}
	delete(c.calls, k.id)
	k.lost = true
	return true
}

// Release gives k back for a later call; nothing of it (its result, Buf)
// may be used after. Release what NewCall returned, whatever happened: a
// call sent and not waited for is given up on, as Wait gives it up when
// its context ends.
func (k *Call) Release() {
	c := k.codec
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls[k.id] == k {
		delete(c.calls, k.id)
		k.lost = true
	}
	if k.lost || len(c.free) >= maxFreeCalls {
		return
	}
	k.err = nil
	k.result = keep(k.result)
	k.Buf = keep(k.Buf)
	c.free = append(c.free, k)
}

// keep is b emptied, for the next use of the buffer, or nil when it is
// too large to keep.
func keep(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	return b[:0]
}

// settle hands body, a reply read from the connection, to the Call it
// answers, which it returns (nil for a Call given up on). It reports
// whether body was such a reply: the others are jsonrpc2's to read.
func (c *ClientCodec) settle(body []byte) (*Call, bool) {
	var room [8]member
	ms, ok := readMembersInto(room[:0], body)
	if !ok || ms.get("method") != nil {
		return nil, false
	}
	id, ok := callID(ms.get("id"))
	if !ok {
		return nil, false
	}
	result, rpcErr := ms.get("result"), ms.get("error")
	c.mu.Lock()
	k := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if k == nil {
		// A call given up on.
		return nil, true
	}
	// Out of the map, k is this reply's alone: no one else writes it
	// until Wait has what is sent on done.
	switch {
	case rpcErr != nil && string(rpcErr) != "null":
		e := new(jsonrpc2.Error)
		if err := json.Unmarshal(rpcErr, e); err != nil {
			k.err = errors.New("jsonrpc2: the daemon's error reply does not decode: " + err.Error())
		} else {
			k.err = e
		}
	case result == nil:
		// As jsonrpc2 reads a reply with neither: a null result.
		k.result = append(k.result[:0], "null"...)
	default:
		// A copy: body is the connection's buffer, read into again.
		k.result = append(k.result[:0], result...)
	}
	k.done <- struct{}{}
	return k, true
}

// callID reads raw as the id of a Call: a plain decimal number from
// callIDs up.
func callID(raw []byte) (uint64, bool) {
	if len(raw) == 0 || len(raw) > 20 {
		return 0, false
	}
	var id uint64
	for _, b := range raw {
		if b < '0' || b > '9' {
			return 0, false
		}
		d := uint64(b - '0')
		if id > (1<<64-1-d)/10 {
			return 0, false
		}
		id = id*10 + d
	}
	return id, id > callIDs
}

// endCalls fails every Call still waiting, and any sent after, with
// jsonrpc2.ErrClosed: the connection has ended and no reply will come.
func (c *ClientCodec) endCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.rd.unwatch != nil {
		c.rd.unwatch()
		c.rd.unwatch, c.rd.watched = nil, nil
	}
	if c.rd.resumer != nil {
		c.rd.resumer.Stop()
	}
	for id, k := range c.calls {
		delete(c.calls, id)
		k.lost = true
		k.err = jsonrpc2.ErrClosed
		k.done <- struct{}{}
	}
}
