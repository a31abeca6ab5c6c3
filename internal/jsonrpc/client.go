package jsonrpc

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

// ClientCodec writes requests as jsonrpc2.VSCodeObjectCodec does, and a
// Call's (NewCall) with params the caller encoded ahead of time (an
// append's chunk), put in only when the frame is written. jsonrpc2
// marshals a request's params three times over (params, the request as a
// map, the message around it), and encoding/json re-checks and copies
// every byte of embedded JSON each time: measured, 18 ms of the client's
// CPU per MiB of chunk, which made `orionctl write` of a large file slower
// than the daemon journaling it.
//
// It reads the way it writes: the reply to a Call is read by the codec,
// never by jsonrpc2, and its result decoded once by the caller into its
// own type. jsonrpc2 would decode it into generic values, twice, and copy
// it first.
type ClientCodec struct {
	mu sync.Mutex
	// calls are the Calls sent and not yet answered, by id; free the
	// ones released for reuse. closed: the connection ended, no Call is
	// sent any more.
	calls  map[uint64]*Call
	free   []*Call
	closed bool
	// hooked: OnSend was given to the Conn, which Calls need (without
	// it the codec cannot tell a Call's request from a notification).
	hooked bool
	ids    atomic.Uint64

	// sending is the request jsonrpc2 showed OnSend and is about to hand
	// WriteObject; guarded by the Conn's send lock, which it holds from
	// one to the other, as are frame and head, WriteObject's buffers.
	sending *jsonrpc2.Request
	frame   []byte
	head    []byte
	// iovs are the parts of a frame with raw content, bufs the list of
	// them written (writeRaw).
	iovs [2][]byte
	bufs net.Buffers
	// body is the buffer frames are read into, used by whoever reads
	// (reading).
	body []byte

	// The reading of replies (read.go): whoever reads frames from the
	// connection, jsonrpc2's read loop or a Call waiting alone, holds
	// reading; see the fields' doc there.
	rd reader
}

// NewClientCodec returns the codec of one client connection.
func NewClientCodec() *ClientCodec {
	c := &ClientCodec{calls: make(map[uint64]*Call), rd: reader{wake: make(chan struct{}, 1)}}
	c.ids.Store(callIDs)
	return c
}

// OnSend is the jsonrpc2.ConnOpt to give the jsonrpc2.Conn of this codec:
// it shows the codec each request the Conn is about to write as the typed
// value it is, so that WriteObject encodes it once from that value rather
// than marshal jsonrpc2's generic map of it and put the held params in.
func (c *ClientCodec) OnSend() jsonrpc2.ConnOpt {
	c.mu.Lock()
	c.hooked = true
	c.mu.Unlock()
	return jsonrpc2.OnSend(func(req *jsonrpc2.Request, _ *jsonrpc2.Response) {
		c.sending = req
	})
}

// ReadObject implements jsonrpc2.ObjectCodec: it reads frames as
// jsonrpc2.VSCodeObjectCodec does, settles the replies to Calls itself and
// hands jsonrpc2 the first other message. When it fails the connection
// ends: the Calls waiting fail with jsonrpc2.ErrClosed. While a Call
// waiting alone reads its own reply (read.go), it does not read: it takes
// what that Call read for jsonrpc2.
func (c *ClientCodec) ReadObject(stream *bufio.Reader, v any) error {
	for {
		body, held, more, err := c.loopFrame(stream)
		if err != nil {
			return err
		}
		if more {
			continue // a Call's reply, settled
		}
		// jsonrpc2 keeps copies of what it reads (its messages' params,
		// results and data are copied out), not body itself, which is
		// read into again once reading is let go.
		if u, ok := v.(json.Unmarshaler); ok {
			err = u.UnmarshalJSON(body)
		} else {
			err = json.Unmarshal(body, v)
		}
		if held {
			c.doneWith()
		}
		return err
	}
}

// readFrame reads one frame's body into the codec's buffer, or into one of
// its own when it is too large to keep.
func (c *ClientCodec) readFrame(stream *bufio.Reader) ([]byte, error) {
	length, err := readHeader(stream, math.MaxUint32)
	if err != nil {
		return nil, err
	}
	if length > maxKeptBuffer {
		return readBody(stream, length)
	}
	if int64(cap(c.body)) < length {
		c.body = make([]byte, max(length, 4<<10))
	}
	body := c.body[:length]
	if _, err := io.ReadFull(stream, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// WriteObject implements jsonrpc2.ObjectCodec: it writes obj as
// VSCodeObjectCodec does, and a Call's request with its id and params.
func (c *ClientCodec) WriteObject(stream io.Writer, obj any) error {
	req := c.sending
	c.sending = nil
	if req == nil || req.Meta != nil || len(req.ExtraFields) != 0 || req.ID.IsString {
		// Without OnSend, or a request encode does not write: what
		// jsonrpc2 marshals.
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		return c.writeParts(stream, [][]byte{data})
	}
	if !req.Notif {
		// A request of jsonrpc2's own: its reply is the read loop's
		// to read.
		c.mu.Lock()
		c.unyieldLocked()
		c.mu.Unlock()
	}
	params, content, err := c.encode(req)
	if err != nil {
		return err
	}
	if content != nil {
		return c.writeRaw(stream, params, content)
	}
	if params == nil {
		return c.writeParts(stream, [][]byte{c.head})
	}
	return c.writeParts(stream, [][]byte{c.head, params, closingBrace})
}

var closingBrace = []byte("}")

// writeParts writes the concatenation of parts as one frame.
func (c *ClientCodec) writeParts(stream io.Writer, parts [][]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > directPart {
		return writeFrameParts(stream, parts...)
	}
	// One write of the whole frame: jsonrpc2's buffered stream passes a
	// write larger than its buffer straight to the socket, and parts
	// written one by one left the header in a segment of its own, so
	// that the daemon woke for it, then again for the body.
	frame := c.frame
	if cap(frame) < frameHeaderRoom+n {
		frame = newFrame(n)
	} else {
		frame = frame[:frameHeaderRoom]
	}
	for _, p := range parts {
		frame = append(frame, p...)
	}
	_, err := stream.Write(sealFrame(frame))
	c.frame = keep(frame)
	return err
}

// directPart is the size past which a frame's parts are written as they
// are rather than copied into one buffer: a copy of a chunk that large
// costs more than the writes it saves.
const directPart = 256 << 10

// encode puts the JSON of req, a request or a notification, up to its
// params in c.head, and returns the params, a Call's own for its request,
// nil when there are none (c.head is then the whole message). A
// notification with the id of a Call is that Call's request.
func (c *ClientCodec) encode(req *jsonrpc2.Request) (params, content []byte, err error) {
	if req.Params != nil {
		params = []byte(*req.Params)
	}
	withID := !req.Notif
	if req.Notif && req.ID.Num > callIDs {
		c.mu.Lock()
		k := c.calls[req.ID.Num]
		if k != nil {
			params, content = k.params, k.content
		}
		c.mu.Unlock()
		if k == nil {
			// Ended with the connection while jsonrpc2 was about to
			// write it.
			return nil, nil, jsonrpc2.ErrClosed
		}
		withID = true
	}
	head := append(c.head[:0], `{"jsonrpc":"2.0",`...)
	if withID {
		head = append(head, `"id":`...)
		head = strconv.AppendUint(head, req.ID.Num, 10)
		head = append(head, ',')
	}
	head = append(head, `"method":`...)
	head = jsonstr.Quote(head, req.Method)
	if params == nil {
		head = append(head, '}')
	} else {
		head = append(head, `,"params":`...)
	}
	c.head = head
	return params, content, nil
}

// writeRaw writes the frame of a Call whose content goes raw after its
// params (Call.SendRaw): the header, c.head and params gathered in the
// codec's frame buffer, then content from where it is, the two in one
// writev on the connection, so that the content is never copied into a
// frame. jsonrpc2's buffered writer, empty between frames (it is flushed
// after each), is passed by; where it is not empty, or there is no
// connection (Conn), the frame goes through it.
func (c *ClientCodec) writeRaw(stream io.Writer, params, content []byte) error {
	n := len(c.head) + len(params) + len(closingBrace)
	frame := c.frame[:0]
	frame = append(frame, "Content-Length: "...)
	frame = strconv.AppendInt(frame, int64(n+len(content)), 10)
	frame = append(frame, "\r\n"+protocol.HeaderRawLength+": "...)
	frame = strconv.AppendInt(frame, int64(len(content)), 10)
	frame = append(frame, "\r\n\r\n"...)
	frame = append(frame, c.head...)
	frame = append(frame, params...)
	frame = append(frame, closingBrace...)
	defer func() { c.frame = keep(frame) }()
	bw, buffered := stream.(*bufio.Writer)
	c.mu.Lock()
	conn := c.rd.conn
	c.mu.Unlock()
	if len(content) == 0 {
		_, err := stream.Write(frame)
		return err
	}
	if conn != nil && buffered && bw.Buffered() == 0 {
		// In the codec's own array: a net.Buffers of the stack's
		// escapes to the heap with every frame.
		c.iovs = [2][]byte{frame, content}
		c.bufs = c.iovs[:]
		_, err := c.bufs.WriteTo(conn)
		c.iovs, c.bufs = [2][]byte{}, nil
		return err
	}
	if _, err := stream.Write(frame); err != nil {
		return err
	}
	_, err := stream.Write(content)
	return err
}

// Waiting is how many Calls await their reply: none once every call
// returned.
func (c *ClientCodec) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}
