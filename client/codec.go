package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// spliceCodec writes requests as jsonrpc2.VSCodeObjectCodec does, except that
// params encoded ahead of time (an append's chunk) are put in only when the
// frame is written. jsonrpc2 marshals a request three times over (params,
// the request as a map, the message around it), and encoding/json re-checks
// and copies every byte of embedded JSON each time: measured, 18 ms of the
// client's CPU per MiB of chunk, which made `orionctl write` of a large file
// slower than the daemon journaling it. The library sees a short
// placeholder instead; the chunk is encoded once.
type spliceCodec struct {
	jsonrpc2.VSCodeObjectCodec

	// prefix makes the placeholders of this connection unlike any string
	// a caller's params hold.
	prefix  string
	mu      sync.Mutex
	next    uint64
	pending map[string][]byte
}

func newSpliceCodec() *spliceCodec {
	return &spliceCodec{prefix: `"orion-params-` + uuid.NewString() + `-`, pending: make(map[string][]byte)}
}

// hold keeps params, which must be one JSON value, for the request that
// carries the returned placeholder as its params. Call release once the
// request was sent (or failed).
func (c *spliceCodec) hold(params []byte) (placeholder json.RawMessage, release func()) {
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

// WriteObject implements jsonrpc2.ObjectCodec.
func (c *spliceCodec) WriteObject(stream io.Writer, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	data, err = c.splice(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stream, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	_, err = stream.Write(data)
	return err
}

// splice puts held params in place of their placeholder. jsonrpc2 marshals
// a request's members from a map, in key order, so params comes last:
// {"id":1,"jsonrpc":"2.0","method":"...","params":"orion-params-...-N"}.
// A placeholder anywhere else (a member after params, which this client
// never sets) is an error rather than a request sent without its params.
func (c *spliceCodec) splice(data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte(c.prefix)) {
		return data, nil
	}
	const member = `,"params":`
	end := bytes.LastIndex(data, []byte(member))
	if end >= 0 && bytes.HasSuffix(data, []byte("}")) {
		key := string(data[end+len(member) : len(data)-1])
		c.mu.Lock()
		params, ok := c.pending[key]
		c.mu.Unlock()
		if ok {
			out := make([]byte, 0, end+len(member)+len(params)+1)
			out = append(out, data[:end+len(member)]...)
			out = append(out, params...)
			return append(out, '}'), nil
		}
	}
	return nil, errors.New("client: a request's params were not where the codec puts them; nothing was sent")
}

// appendParamsJSON encodes session.append's params as encoding/json would,
// but without escaping <, > and & (the daemon reads either) and in one pass.
// Invalid UTF-8 becomes U+FFFD, as encoding/json makes it.
func appendParamsJSON(p protocol.AppendParams) []byte {
	// A field added to AppendParams must be added here too: this
	// conversion stops compiling when the struct changes.
	_ = struct {
		SessionID string `json:"session_id"`
		Seq       uint64 `json:"seq"`
		Chunk     string `json:"chunk"`
	}(p)
	b := make([]byte, 0, len(p.Chunk)+len(p.Chunk)/8+len(p.SessionID)+64)
	b = append(b, `{"session_id":`...)
	b, _ = jsontext.AppendQuote(b, p.SessionID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, p.Seq, 10)
	b = append(b, `,"chunk":`...)
	b, _ = jsontext.AppendQuote(b, p.Chunk)
	return append(b, '}')
}

// writeParamsJSON encodes session.write's params: begin's small fields as
// encoding/json does, then the content in one pass, as appendParamsJSON
// encodes a chunk (held by the codec, it is not marshaled again).
func writeParamsJSON(p protocol.WriteParams) ([]byte, error) {
	begin, err := json.Marshal(p.BeginParams)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(begin)+len(p.Content)+len(p.Content)/8+16)
	b = append(b, begin[:len(begin)-1]...)
	if len(begin) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"content":`...)
	b, _ = jsontext.AppendQuote(b, p.Content)
	return append(b, '}'), nil
}
