package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// Frame limits. A header is a handful of short lines ("Content-Length: N"
// and perhaps "Content-Type: ..."), so these are generous for every client
// and still keep a line that never ends from costing more than a buffer.
const (
	maxHeaderLine  = 1 << 10
	maxHeaderLines = 8
	// maxIDBytes bounds a request id as sent: it is kept until the reply is
	// written, so a megabyte-long string id per in-flight request would
	// otherwise undo the in-flight bound.
	maxIDBytes = 256
	// messageOverhead is what an append's envelope (jsonrpc, id, method,
	// session_id, seq) and the other methods' small params need beside a
	// chunk.
	messageOverhead = 64 << 10
	// chunkEscapeFactor is the most bytes a content byte can take inside a
	// JSON string as clients write it: Go's encoding/json writes <, >, &,
	// control bytes and invalid UTF-8 as six-byte \uXXXX escapes (other Go
	// clients; ours escapes control bytes only), and JSON.stringify does the
	// same for control characters (the Node client).
	chunkEscapeFactor = 6
	// DefaultMaxInflight is how many requests of one connection may be
	// read and not yet answered. Clients keep a few in flight at most (the
	// Go client's Stream three appends, the controllers one per session),
	// so this only slows a client that pipelines far ahead without reading
	// replies.
	DefaultMaxInflight = 64
	// DefaultMaxInflightBytes bounds the same requests by size: each
	// waiting append keeps its chunk decoded, so 64 chunks of 1 MiB
	// pipelined on one connection would hold 64 MiB and, with the garbage
	// collector's headroom, grow the daemon by ~190 MiB. 16 MiB holds 16
	// of the largest chunks, and hundreds of the clients' usual 16-64 KiB.
	DefaultMaxInflightBytes = 16 << 20
)

// MaxMessageBytes is the largest frame (Content-Length) the daemon reads
// for a chunk limit of maxChunk bytes: a chunk of maxChunk bytes that a
// client escaped in full, plus the envelope. Larger frames are refused with
// message_too_large before their body is read, and the connection is
// closed.
func MaxMessageBytes(maxChunk int64) int64 {
	return chunkEscapeFactor*maxChunk + messageOverhead
}

// frameError is a frame the daemon cannot go on reading after: it is
// answered, then the connection closes.
type frameError struct {
	err *protocol.Error
}

func (e *frameError) Error() string { return "reading a frame: " + e.err.Error() }

// paramStash carries each request's params, as sent, from the connection's
// frameStream to the handler past jsonrpc2, whose Request decoding turns
// params into generic values and back (a 1 MiB chunk twice over, and up to
// six times larger again where encoding/json escapes HTML characters). Keys
// are the synthetic request ids frameStream assigns, unique in the daemon.
type paramStash struct {
	next atomic.Uint64
	mu   sync.Mutex
	m    map[uint64]json.RawMessage
}

func newParamStash() *paramStash {
	return &paramStash{m: make(map[uint64]json.RawMessage)}
}

// newID returns a synthetic request id no other request of this daemon has.
func (s *paramStash) newID() uint64 { return s.next.Add(1) }

func (s *paramStash) put(id uint64, params json.RawMessage) {
	s.mu.Lock()
	s.m[id] = params
	s.mu.Unlock()
}

// take returns and forgets the params of request id.
func (s *paramStash) take(id uint64) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[id]
	delete(s.m, id)
	return p, ok
}

// frameStream is a jsonrpc2.ObjectStream for LSP-style Content-Length
// frames that never reads more than its limits allow, answers malformed
// messages as JSON-RPC 2.0 says instead of dropping the connection, echoes
// request ids exactly as sent, and stops reading while too many requests
// (or request bytes) are unanswered.
//
// jsonrpc2 holds ids as uint64 (so -1 came back as 18446744073709551615,
// and 1.5 or 2^64 closed the connection): every request id is replaced on
// read by a synthetic one and put back, byte for byte, when the reply is
// written.
type frameStream struct {
	rwc    io.ReadWriteCloser
	r      *bufio.Reader
	limits frameLimits
	stash  *paramStash
	log    *slog.Logger
	// onFrame, if set, is told when a frame starts to arrive (conns.go).
	onFrame func()

	closed    chan struct{}
	closeOnce sync.Once
	// freed wakes the read loop, waiting for room, when a reply is written.
	freed chan struct{}

	// wmu keeps frames whole on the wire: replies are written from many
	// handler goroutines.
	wmu sync.Mutex

	mu sync.Mutex
	// ids maps each synthetic id to its request as sent.
	ids map[uint64]pending
	// inflight and inflightBytes count requests read and not yet answered,
	// and their frames' sizes. The read loop waits while they are at their
	// limits, so a client that does not read its replies stops being read
	// instead of being buffered.
	inflight      int
	inflightBytes int64
	// heldTotal is what this connection holds of limits.Total, given back
	// with each reply, or all at once when the connection closes (replies
	// to a closed connection are never written). gone is set then, so
	// nothing is given back twice.
	heldTotal int64
	gone      bool
}

// pending is a request read and not yet answered.
type pending struct {
	id   json.RawMessage
	size int64
}

// frameLimits bound what one connection may make the daemon hold.
type frameLimits struct {
	// MaxMessage is the largest Content-Length read.
	MaxMessage int64
	// MaxInflight and MaxInflightBytes bound the requests read and not yet
	// answered, by count and by frame bytes; one request is always let in,
	// however large (up to MaxMessage).
	MaxInflight      int
	MaxInflightBytes int64
	// Total, if set, bounds the same bytes across every connection.
	Total *byteBudget
	// WriteTimeout bounds how long a reply may wait for a client that
	// does not read; the connection is closed then (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
	// HeaderTimeout, if set, bounds a frame's header from its first byte,
	// and its body from the header's end (see awaitFrame in conns.go).
	HeaderTimeout time.Duration
}

// DefaultWriteTimeout is how long a reply may wait on a full socket. A
// client that reads none of its replies for that long loses its
// connection, and with it the room its requests held.
const DefaultWriteTimeout = time.Minute

func newFrameStream(rwc io.ReadWriteCloser, limits frameLimits, stash *paramStash, log *slog.Logger) *frameStream {
	if limits.MaxInflight <= 0 {
		limits.MaxInflight = DefaultMaxInflight
	}
	if limits.MaxInflightBytes <= 0 {
		limits.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if limits.WriteTimeout <= 0 {
		limits.WriteTimeout = DefaultWriteTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &frameStream{
		rwc: rwc,
		// The buffer bounds a header line as well as speeding up reads;
		// bodies larger than it are read straight into their own slice.
		r:      bufio.NewReaderSize(rwc, 4<<10),
		limits: limits,
		stash:  stash,
		log:    log,
		closed: make(chan struct{}),
		freed:  make(chan struct{}, 1),
		ids:    make(map[uint64]pending),
	}
}

// ReadObject implements jsonrpc2.ObjectStream. It returns the next request
// the handler should see; messages that are not valid requests are answered
// here and skipped. An error closes the connection.
func (s *frameStream) ReadObject(v any) error {
	for {
		if err := s.admit(func() bool { return s.inflight < s.limits.MaxInflight }, 1, 0); err != nil {
			return err
		}
		length, err := s.readHeader()
		if err == nil {
			// The slot taken above already counts this request; only its
			// bytes are left to fit.
			err = s.admit(func() bool {
				return s.inflightBytes == 0 || s.inflightBytes+length <= s.limits.MaxInflightBytes
			}, 0, length)
			if err != nil {
				s.release(0)
				return err
			}
			if err = s.takeTotal(length); err != nil {
				s.release(length)
				return err
			}
		}
		var body []byte
		if err == nil {
			s.bodyDeadline(length)
			body, err = s.readBody(length)
		}
		if err != nil {
			s.release(max(length, 0))
			var fe *frameError
			if errors.As(err, &fe) {
				s.log.Info("closing a connection after an unreadable frame", "reason", fe.err.Data.Reason, "err", fe.err.Message)
				if werr := s.writeError(nil, fe.err); werr != nil {
					s.log.Debug("answering an unreadable frame", "err", werr)
				}
			}
			s.logFrameTimeout(err)
			return err
		}
		msg, perr := parseMessage(body)
		if perr != nil {
			s.release(length)
			s.log.Debug("answering a malformed message", "reason", perr.Data.Reason, "err", perr.Message)
			if err := s.writeError(msg.id, perr); err != nil {
				return err
			}
			continue
		}
		lib := libraryRequest{JSONRPC: "2.0", Method: msg.method}
		if msg.id == nil {
			// Notifications are never answered, so they hold no room; their
			// params are dropped (none are defined).
			s.release(length)
		} else {
			syn := s.stash.newID()
			lib.ID = &syn
			s.mu.Lock()
			s.ids[syn] = pending{id: msg.id, size: length}
			s.mu.Unlock()
			if msg.params != nil {
				s.stash.put(syn, msg.params)
			}
		}
		b, err := json.Marshal(lib)
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			// Cannot happen for what parseMessage lets through; if it
			// does, the connection ends rather than a request going
			// unanswered forever.
			if lib.ID != nil {
				s.forget(*lib.ID)
				s.stash.take(*lib.ID)
			}
			return fmt.Errorf("handing a request to jsonrpc2: %w", err)
		}
		return nil
	}
}

// libraryRequest is what jsonrpc2 is given: the method and a synthetic id,
// never the client's params (the handler takes those from the stash).
type libraryRequest struct {
	JSONRPC string  `json:"jsonrpc"`
	ID      *uint64 `json:"id,omitempty"`
	Method  string  `json:"method"`
}

// admit waits until fits (called with s.mu held) allows a request in, then
// counts it: n requests of size bytes.
func (s *frameStream) admit(fits func() bool, n int, size int64) error {
	for {
		s.mu.Lock()
		ok := fits()
		if ok {
			s.inflight += n
			s.inflightBytes += size
		}
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-s.freed:
		case <-s.closed:
			return jsonrpc2.ErrClosed
		}
	}
}

// takeTotal waits until size bytes fit the daemon-wide budget and counts
// them for this connection.
func (s *frameStream) takeTotal(size int64) error {
	if s.limits.Total == nil {
		return nil
	}
	for {
		ok, freed := s.limits.Total.take(size)
		if ok {
			s.mu.Lock()
			gone := s.gone
			if !gone {
				s.heldTotal += size
			}
			s.mu.Unlock()
			if gone {
				s.limits.Total.give(size)
				return jsonrpc2.ErrClosed
			}
			return nil
		}
		select {
		case <-freed:
		case <-s.closed:
			return jsonrpc2.ErrClosed
		}
	}
}

// release uncounts one request of size bytes and wakes the read loop.
func (s *frameStream) release(size int64) {
	s.mu.Lock()
	s.inflight--
	s.inflightBytes -= size
	var give int64
	if s.limits.Total != nil && !s.gone && size > 0 && s.heldTotal > 0 {
		give = min(size, s.heldTotal)
		s.heldTotal -= give
	}
	s.mu.Unlock()
	if give > 0 {
		s.limits.Total.give(give)
	}
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// forget drops synthetic id syn and frees its room; it reports the id as
// sent, or nil for an id this stream never assigned.
func (s *frameStream) forget(syn uint64) json.RawMessage {
	s.mu.Lock()
	p, ok := s.ids[syn]
	delete(s.ids, syn)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	s.release(p.size)
	return p.id
}

// readHeader reads one frame's header and returns its Content-Length. A
// frameError is a frame that cannot be read; other errors come from the
// connection. It returns -1 with every error.
func (s *frameStream) readHeader() (int64, error) {
	if err := s.awaitFrame(); err != nil {
		return -1, err
	}
	length := int64(-1)
	for n := 0; ; n++ {
		if n == maxHeaderLines {
			return -1, malformedFrame("more than %d header lines", maxHeaderLines)
		}
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine {
			return -1, malformedFrame("a header line is longer than %d bytes", maxHeaderLine)
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (n > 0 || len(line) > 0) {
				return -1, io.ErrUnexpectedEOF
			}
			return -1, err
		}
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return -1, malformedFrame(`a header line ends in \n without \r`)
		}
		line = line[:len(line)-2]
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return -1, malformedFrame("header line %q has no colon", truncate(line, 64))
		}
		if !strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			// Content-Type and any other header are allowed and ignored.
			continue
		}
		l, err := parseLength(bytes.TrimSpace(value), s.limits.MaxMessage)
		if err != nil {
			return -1, err
		}
		if length >= 0 && l != length {
			return -1, malformedFrame("two Content-Length headers disagree (%d and %d)", length, l)
		}
		length = l
	}
	if length < 0 {
		return -1, malformedFrame("no Content-Length header")
	}
	return length, nil
}

// readBody reads a frame's body of length bytes, at most MaxMessage.
func (s *frameStream) readBody(length int64) ([]byte, error) {
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// parseLength reads a Content-Length value, refusing one over limit
// before anything of the body is read.
func parseLength(v []byte, limit int64) (int64, error) {
	if len(v) == 0 {
		return 0, malformedFrame("Content-Length is empty")
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, malformedFrame("Content-Length %q is not a decimal number of bytes", truncate(v, 32))
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > limit {
		e := protocol.Errorf(protocol.CodeTooLarge, protocol.ReasonMessageTooLarge,
			"message of %s bytes is over this daemon's limit of %d bytes (derived from --max-chunk-bytes); send content in smaller chunks",
			truncate(v, 32), limit)
		e.Data.Limit = limit
		return 0, &frameError{e}
	}
	return n, nil
}

func malformedFrame(format string, args ...any) error {
	return &frameError{protocol.Errorf(protocol.CodeParseError, protocol.ReasonMalformedFrame,
		"malformed frame: "+format+`; each message is "Content-Length: N\r\n\r\n" and N bytes of JSON`, args...)}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// message is the part of a JSON-RPC request the stream checks and keeps.
type message struct {
	// id is the id as sent, nil for a notification.
	id     json.RawMessage
	method string
	// params is nil when absent or null.
	params json.RawMessage
}

// parseMessage checks body against JSON-RPC 2.0's request object. On
// failure the returned message's id is what the error reply should carry:
// the request's id where one could be read, else nil (JSON null).
func parseMessage(body []byte) (message, *protocol.Error) {
	var msg message
	fields, ok := topLevelFields(body)
	if !ok {
		if !jsontext.Value(body).IsValid(jsonOptions...) {
			return msg, protocol.Errorf(protocol.CodeParseError, protocol.ReasonInvalidJSON,
				"parse error: the message is not valid JSON")
		}
		if bytes.TrimLeft(body, " \t\r\n")[0] == '[' {
			return msg, protocol.Errorf(protocol.CodeInvalidRequest, protocol.ReasonBatchNotSupported,
				"invalid request: batches (JSON arrays) are not supported by this daemon; send each request as its own message")
		}
		return msg, invalidRequest("a request must be a JSON object")
	}
	// The id is checked first, so that the other refusals can carry it and
	// the client's pending call does not wait forever.
	if id := fields.id; id != nil {
		switch {
		case len(id) > maxIDBytes:
			return msg, invalidRequest("the id is %d bytes long; use a number or a string of at most %d bytes", len(id), maxIDBytes)
		case id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'):
			// A copy: the id is kept until the reply is written, and a
			// slice of the body would keep the whole frame (a chunk of up
			// to several MiB) alive with it.
			msg.id = bytes.Clone(id)
		case string(id) == "null":
			return msg, invalidRequest(`"id": null is not supported; give a number or a string, or leave id out for a notification`)
		default:
			return msg, invalidRequest("the id must be a number or a string")
		}
	}
	if fields.response {
		// A response: this daemon sends no requests, so there is nothing it
		// answers; its id is the client's own and must not be echoed as if
		// it were a request of ours.
		msg.id = nil
		return msg, invalidRequest("this daemon sends no requests, so it takes no responses; a request has a method")
	}
	if string(fields.jsonrpc) != `"2.0"` {
		return msg, invalidRequest(`"jsonrpc" must be "2.0"`)
	}
	if fields.method == nil {
		return msg, invalidRequest("the method is missing")
	}
	if fields.method[0] != '"' {
		return msg, invalidRequest("the method must be a string")
	}
	method, err := jsontext.AppendUnquote(nil, fields.method)
	if err != nil {
		return msg, invalidRequest("the method is not valid UTF-8")
	}
	msg.method = string(method)
	if p := fields.params; p != nil && string(p) != "null" {
		msg.params = p
	}
	return msg, nil
}

// jsonOptions read JSON as encoding/json does: a repeated member's last
// value wins, and text that is not valid Unicode is read (then refused with
// its own code, invalid_utf8, where the daemon checks the params).
var jsonOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// requestFields are a request object's members the stream looks at, each
// as sent (nil when absent).
type requestFields struct {
	id, jsonrpc, method, params json.RawMessage
	// response is set by a result or error member.
	response bool
}

// topLevelFields reads body as one JSON object in a single validating pass
// (the chunk of an append is most of the body: encoding/json's Valid and
// then Unmarshal into a map read it twice more). It returns false when
// body is not valid JSON or not an object. The values alias body.
func topLevelFields(body []byte) (requestFields, bool) {
	var f requestFields
	// Over a bytes.Buffer the decoder parses body in place, so values
	// alias it and nothing is copied.
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsonOptions...)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return f, false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return f, false
		}
		// A token is valid only until the next read.
		name := tok.String()
		value, err := dec.ReadValue()
		if err != nil {
			return f, false
		}
		switch name {
		case "id":
			f.id = json.RawMessage(value)
		case "jsonrpc":
			f.jsonrpc = json.RawMessage(value)
		case "method":
			f.method = json.RawMessage(value)
		case "params":
			f.params = json.RawMessage(value)
		case "result", "error":
			f.response = true
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return f, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return f, false
	}
	return f, true
}

func invalidRequest(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest, "invalid request: "+format, args...)
}

// WriteObject implements jsonrpc2.ObjectStream: it puts back the id the
// client sent and frees the request's slot once the reply is written (or
// failed), not before, so replies a client does not read stay bounded too.
func (s *frameStream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	syn, rest, ok := responseID(data)
	if !ok {
		return s.writeFrame(data)
	}
	s.mu.Lock()
	raw, known := s.ids[syn]
	s.mu.Unlock()
	if !known {
		return s.writeFrame(data)
	}
	out := make([]byte, 0, len(data)+len(raw.id))
	out = append(out, `{"id":`...)
	out = append(out, raw.id...)
	out = append(out, rest...)
	err = s.writeFrame(out)
	s.forget(syn)
	return err
}

// responseID finds the synthetic id of a reply as jsonrpc2 v0.2 marshals
// it (Response's first field is ID, a uint64): {"id":N,...}. It returns the
// id and what follows it. The daemon's own requests are all notifications,
// marshalled from a map with "jsonrpc" first and no id, so none is taken
// for a reply.
func responseID(data []byte) (uint64, []byte, bool) {
	const prefix = `{"id":`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return 0, nil, false
	}
	rest := data[len(prefix):]
	end := bytes.IndexByte(rest, ',')
	if end <= 0 {
		return 0, nil, false
	}
	id, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return id, rest[end:], true
}

// errorReply is a reply the stream writes itself, for a message the
// handler never sees.
type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *protocol.Error `json:"error"`
}

// writeError answers with e; a nil id is written as null.
func (s *frameStream) writeError(id json.RawMessage, e *protocol.Error) error {
	data, err := encodeErrorReply(id, e)
	if err != nil {
		return err
	}
	return s.writeFrame(data)
}

func encodeErrorReply(id json.RawMessage, e *protocol.Error) ([]byte, error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	return json.Marshal(errorReply{JSONRPC: "2.0", ID: id, Error: e})
}

func (s *frameStream) writeFrame(data []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	dl, timed := s.rwc.(interface{ SetWriteDeadline(time.Time) error })
	if timed {
		dl.SetWriteDeadline(time.Now().Add(s.limits.WriteTimeout))
	}
	err := writeFrame(s.rwc, data)
	if timed {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			s.log.Info("closing a connection that did not read its replies", "timeout", s.limits.WriteTimeout)
			s.Close()
		}
	}
	return err
}

// writeFrame writes data as one frame, header and body in one writev where
// w is a socket.
func writeFrame(w io.Writer, data []byte) error {
	bufs := net.Buffers{[]byte("Content-Length: " + strconv.Itoa(len(data)) + "\r\n\r\n"), data}
	_, err := bufs.WriteTo(w)
	return err
}

// Close implements jsonrpc2.ObjectStream; it also wakes a read loop waiting
// for a free slot.
func (s *frameStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.mu.Lock()
	held := s.heldTotal
	s.heldTotal, s.gone = 0, true
	s.mu.Unlock()
	if held > 0 {
		s.limits.Total.give(held)
	}
	return s.rwc.Close()
}
