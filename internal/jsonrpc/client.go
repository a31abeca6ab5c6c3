package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"github.com/sourcegraph/jsonrpc2"
)

// ClientCodec writes requests as jsonrpc2.VSCodeObjectCodec does, except that
// params encoded ahead of time (an append's chunk) are put in only when the
// frame is written. jsonrpc2 marshals a request three times over (params,
// the request as a map, the message around it), and encoding/json re-checks
// and copies every byte of embedded JSON each time: measured, 18 ms of the
// client's CPU per MiB of chunk, which made `orionctl write` of a large file
// slower than the daemon journaling it. The library sees a short
// placeholder instead; the chunk is encoded once.
type ClientCodec struct {
	jsonrpc2.VSCodeObjectCodec

	// prefix makes the placeholders of this connection unlike any string
	// a caller's params hold.
	prefix  string
	mu      sync.Mutex
	next    uint64
	pending map[string][]byte
}

// NewClientCodec returns the codec of one client connection.
func NewClientCodec() *ClientCodec {
	return &ClientCodec{prefix: `"orion-params-` + uuid.NewString() + `-`, pending: make(map[string][]byte)}
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
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	parts, err := c.splice(data)
	if err != nil {
		return err
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
	_, err = stream.Write(sealFrame(frame))
	return err
}

// directPart is the size past which a frame's parts are written as they
// are rather than copied into one buffer: a copy of a chunk that large
// costs more than the writes it saves.
const directPart = 256 << 10

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
