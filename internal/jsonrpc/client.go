package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/jsonstr"
)

// ClientCodec writes requests as jsonrpc2.VSCodeObjectCodec does, except that
// params encoded ahead of time (an append's chunk) are put in only when the
// frame is written. jsonrpc2 marshals a request three times over (params,
// the request as a map, the message around it), and encoding/json re-checks
// and copies every byte of embedded JSON each time: measured, 18 ms of the
// client's CPU per MiB of chunk, which made `orionctl write` of a large file
// slower than the daemon journaling it. The library sees a short
// placeholder instead; the chunk is encoded once.
//
// It reads the way it writes: a reply to a call that takes its result raw
// (Expect) reaches jsonrpc2 with a placeholder for its result, which the
// caller decodes once, into its own type. jsonrpc2 would decode the result
// into generic values first, and copy it, before the caller's decoding.
type ClientCodec struct {
	// prefix makes the placeholders of this connection unlike any string
	// a caller's params hold.
	prefix  string
	mu      sync.Mutex
	next    uint64
	pending map[string][]byte
	// results holds, by request id, the calls that take their result raw
	// (Expect): nil until the reply comes, then its result.
	results map[uint64]*json.RawMessage
	ids     atomic.Uint64

	// sending is the request jsonrpc2 showed OnSend and is about to hand
	// WriteObject; guarded by the Conn's send lock, which it holds from
	// one to the other.
	sending *jsonrpc2.Request
	// head is ReadObject's buffer for what it hands jsonrpc2.
	head []byte
}

// NewClientCodec returns the codec of one client connection.
func NewClientCodec() *ClientCodec {
	c := &ClientCodec{prefix: `"orion-params-` + uuid.NewString() + `-`, pending: make(map[string][]byte),
		results: make(map[uint64]*json.RawMessage)}
	c.ids.Store(expectIDs)
	return c
}

// expectIDs is where the ids of Expect start: far above the ones jsonrpc2
// numbers the connection's other calls with (from 0), so that the two never
// meet.
const expectIDs = 1 << 48

// Expect registers a call that takes its result raw. Make the call with
// jsonrpc2.PickID(jsonrpc2.ID{Num: id}) and no result; once it returned
// without an error, result is its result as sent (false if the reply had
// none). Call done when finished with it, whatever happened.
func (c *ClientCodec) Expect() (id uint64, result func() (json.RawMessage, bool), done func()) {
	id = c.ids.Add(1)
	c.mu.Lock()
	c.results[id] = nil
	c.mu.Unlock()
	return id, func() (json.RawMessage, bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			r := c.results[id]
			if r == nil {
				return nil, false
			}
			return *r, true
		}, func() {
			c.mu.Lock()
			delete(c.results, id)
			c.mu.Unlock()
		}
}

// OnSend is the jsonrpc2.ConnOpt to give the jsonrpc2.Conn of this codec:
// it shows the codec each request the Conn is about to write as the typed
// value it is, so that WriteObject encodes it once from that value rather
// than marshal jsonrpc2's generic map of it and put the held params in.
func (c *ClientCodec) OnSend() jsonrpc2.ConnOpt {
	return jsonrpc2.OnSend(func(req *jsonrpc2.Request, _ *jsonrpc2.Response) {
		c.sending = req
	})
}

// ReadObject implements jsonrpc2.ObjectCodec: it reads a frame as
// jsonrpc2.VSCodeObjectCodec does and hands jsonrpc2 the message, or, for
// the reply to a call that takes its result raw (Expect), the reply with a
// placeholder for the result, which it keeps for the caller.
func (c *ClientCodec) ReadObject(stream *bufio.Reader, v any) error {
	length, err := readHeader(stream, math.MaxUint32)
	if err != nil {
		return err
	}
	body, err := readBody(stream, length)
	if err != nil {
		return err
	}
	data := c.keepResult(body)
	if u, ok := v.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(data)
	}
	return json.Unmarshal(data, v)
}

// keepResult keeps the result of body, when it is the reply to a call that
// takes its result raw, and returns what jsonrpc2 is to read of it: the
// reply with 0 as its result, or else body as it is.
func (c *ClientCodec) keepResult(body []byte) []byte {
	var room [8]member
	ms, ok := readMembersInto(room[:0], body)
	if !ok {
		return body
	}
	rawID, result := ms.get("id"), ms.get("result")
	if result == nil || ms.get("error") != nil || ms.get("method") != nil {
		return body
	}
	id, err := strconv.ParseUint(string(rawID), 10, 64)
	if err != nil || id <= expectIDs {
		return body
	}
	c.mu.Lock()
	_, expected := c.results[id]
	if expected {
		// The result aliases body, which is this reply's alone.
		r := json.RawMessage(result)
		c.results[id] = &r
	}
	c.mu.Unlock()
	if !expected {
		return body
	}
	c.head = append(c.head[:0], `{"jsonrpc":"2.0","id":`...)
	c.head = strconv.AppendUint(c.head, id, 10)
	c.head = append(c.head, `,"result":0}`...)
	return c.head
}

// Hold keeps params, which must be one JSON value, for the request that
// carries the returned placeholder as its params. Call release once the
// request was sent (or failed).
func (c *ClientCodec) Hold(params []byte) (placeholder json.RawMessage, release func()) {
	c.mu.Lock()
	c.next++
	key := c.prefix + strconv.FormatUint(c.next, 10) + `"`
	c.pending[key] = params
	c.mu.Unlock()
	return json.RawMessage(key), func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}
}

// WriteObject implements jsonrpc2.ObjectCodec: it writes obj as
// VSCodeObjectCodec does, with held params in place of their placeholder.
func (c *ClientCodec) WriteObject(stream io.Writer, obj any) error {
	req := c.sending
	c.sending = nil
	var parts [][]byte
	if req != nil && req.Meta == nil && len(req.ExtraFields) == 0 && !req.ID.IsString {
		parts = c.encode(req)
	} else {
		// Without OnSend: what jsonrpc2 marshals, with the held params
		// put in.
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		if parts, err = c.splice(data); err != nil {
			return err
		}
	}
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
	frame := newFrame(n)
	for _, p := range parts {
		frame = append(frame, p...)
	}
	_, err := stream.Write(sealFrame(frame))
	return err
}

// directPart is the size past which a frame's parts are written as they
// are rather than copied into one buffer: a copy of a chunk that large
// costs more than the writes it saves.
const directPart = 256 << 10

// encode is the JSON of req, a request or a notification, in parts: held
// params, in place of their placeholder, as they are.
func (c *ClientCodec) encode(req *jsonrpc2.Request) [][]byte {
	head := make([]byte, 0, 64+len(req.Method))
	head = append(head, `{"jsonrpc":"2.0",`...)
	if !req.Notif {
		head = append(head, `"id":`...)
		head = strconv.AppendUint(head, req.ID.Num, 10)
		head = append(head, ',')
	}
	head = append(head, `"method":`...)
	head = jsonstr.Quote(head, req.Method)
	if req.Params == nil {
		return [][]byte{append(head, '}')}
	}
	head = append(head, `,"params":`...)
	params := []byte(*req.Params)
	c.mu.Lock()
	held, ok := c.pending[string(params)]
	c.mu.Unlock()
	if ok {
		params = held
	}
	return [][]byte{head, params, []byte("}")}
}

// splice puts held params in place of their placeholder. It reads data as
// the JSON-RPC request it is, whatever the order jsonrpc2 writes its
// members in: the placeholder must be the value of "params", and every
// other member is copied as it is. A placeholder anywhere else is an
// error rather than a request sent without its params. It returns the
// message in parts, the held params one of them as they are, so that a
// chunk of a MiB is not copied once more only to be written.
func (c *ClientCodec) splice(data []byte) ([][]byte, error) {
	if !bytes.Contains(data, []byte(c.prefix)) {
		return [][]byte{data}, nil
	}
	ms, ok := readMembers(data)
	if !ok {
		return nil, errors.New("client: jsonrpc2 wrote a request that is not a JSON object; nothing was sent")
	}
	var params []byte
	for _, m := range ms {
		if !m.is("params") {
			continue
		}
		c.mu.Lock()
		params = c.pending[string(m.value)]
		c.mu.Unlock()
	}
	if params == nil {
		return nil, errors.New("client: a request's params were not where the codec puts them; nothing was sent")
	}
	out := make([]byte, 0, len(data))
	var parts [][]byte
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.name...)
		out = append(out, ':')
		if m.is("params") {
			parts = append(parts, out, params)
			out = nil
		} else {
			out = append(out, m.value...)
		}
	}
	return append(parts, append(out, '}')), nil
}

// Held is how many params are held: none once every call that held some
// returned.
func (c *ClientCodec) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}
