package client

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

// A chunk goes raw, after the JSON of its params (protocol.HeaderRawLength),
// to a daemon that takes it: neither quoted here nor scanned and unquoted
// there. Whether the daemon does is asked once per connection
// (daemon.status's features), the first time a chunk of at least
// rawDiscoverBytes is sent, or learned from any Status call before; a
// daemon that does not list protocol.FeatureRawContent (an older one, which
// would take the raw bytes for the next frame's) is sent JSON as before.
// Once known, content of any size goes raw: it pays at every size measured
// (the daemon's request path for a 4 KiB chunk took 1.5-2 us raw, 3.5 us
// in JSON; 64 KiB 5 against 42-49), but below rawDiscoverBytes it would not
// pay for the daemon.status round trip of a client that sends a few small
// chunks and goes.
const rawDiscoverBytes = 16 << 10

// rawState is what a Client knows of its daemon's raw content.
type rawState struct {
	mu sync.Mutex
	// known: a daemon.status answered on this connection; ok: it listed
	// protocol.FeatureRawContent.
	known, ok bool
}

// learn notes what a daemon.status answer says of raw content.
func (s *rawState) learn(st protocol.StatusResult) {
	s.mu.Lock()
	s.known, s.ok = true, slices.Contains(st.Features, protocol.FeatureRawContent)
	s.mu.Unlock()
}

// rawFor reports whether content of size bytes goes raw, asking the daemon
// once when it pays to know and is not known yet. A daemon that cannot
// answer daemon.status (it refuses it, or the call fails) is sent JSON.
func (c *Client) rawFor(ctx context.Context, size int) bool {
	s := &c.raw
	s.mu.Lock()
	known, ok := s.known, s.ok
	s.mu.Unlock()
	if !known && size >= rawDiscoverBytes {
		var st protocol.StatusResult
		err := c.Call(ctx, protocol.MethodDaemonStatus, nil, &st)
		var pe *protocol.Error
		switch {
		case err == nil:
			s.learn(st)
			ok = slices.Contains(st.Features, protocol.FeatureRawContent)
		case errors.As(err, &pe):
			// It answered, and not with a status: it reads no raw
			// content either.
			s.mu.Lock()
			s.known, s.ok = true, false
			s.mu.Unlock()
		}
	}
	return ok
}

// sendChunk sends chunk seq of session id through k: raw where rawFor says
// so and the chunk is valid UTF-8, else as a JSON string (where invalid
// UTF-8 becomes U+FFFD, as encoding/json makes it). The params' JSON is
// encoded into *enc, which must not be touched until the request is
// written (Send returned); chunk is not held after either.
func (c *Client) sendChunk(ctx context.Context, k *jsonrpc.Call, enc *[]byte, id string, seq uint64, chunk []byte) error {
	if c.rawFor(ctx, len(chunk)) && utf8.Valid(chunk) {
		*enc = appendRawChunkParams((*enc)[:0], id, seq)
		return k.SendRaw(ctx, c.conn, protocol.MethodSessionAppend, *enc, chunk)
	}
	*enc = appendChunkParams(slices.Grow((*enc)[:0], len(chunk)+len(chunk)/8+len(id)+64), id, seq, chunk)
	return k.Send(ctx, c.conn, protocol.MethodSessionAppend, *enc)
}

// appendRawChunkParams appends session.append's params without the chunk,
// which goes raw, to dst.
func appendRawChunkParams(dst []byte, id string, seq uint64) []byte {
	dst = append(dst, `{"session_id":`...)
	dst = jsonstr.Quote(dst, id)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	return append(dst, '}')
}

// writeRaw is Write with the content sent raw: the params' JSON is
// begin's, and the content follows it from where it is.
func (c *Client) writeRaw(ctx context.Context, p protocol.WriteParams, r *protocol.FinalizeResult) error {
	// A field added to WriteParams must be sent too: this conversion stops
	// compiling when the struct changes.
	_ = struct {
		protocol.BeginParams
		Content string `json:"content"`
	}(p)
	begin, err := json.Marshal(p.BeginParams)
	if err != nil {
		return err
	}
	k := c.codec.NewCall()
	defer k.Release()
	content := unsafe.Slice(unsafe.StringData(p.Content), len(p.Content))
	if err := k.SendRaw(ctx, c.conn, protocol.MethodSessionWrite, begin, content); err != nil {
		return protocolError(err)
	}
	b, err := k.Wait(ctx)
	if err != nil {
		return protocolError(err)
	}
	return json.Unmarshal(b, r)
}
