package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

// Request is a request as its ServerStream read it, which the handler
// takes from the stream (ServerStream.Take) rather than from jsonrpc2:
// jsonrpc2 decodes what it is handed twice with encoding/json into generic
// values (a 1 MiB chunk twice over, and up to six times larger again where
// encoding/json escapes HTML characters; 30 allocations for even an id
// and a method), so it is handed an empty placeholder and nothing of the
// request.
type Request struct {
	// ID is the request's number on its stream, never 0: the reply is
	// written with it (jsonrpc2.ID{Num: ID}) and goes out with the id the
	// client sent, and a cancellation names the request by it (OnCancel).
	ID uint64
	// Method is the method as sent.
	Method string
	// Params is the params as sent; its JSON is nil when they are absent
	// or null.
	Params Raw
}

// RPCID is the id jsonrpc2 replies to r with.
func (r Request) RPCID() jsonrpc2.ID { return jsonrpc2.ID{Num: r.ID} }

// Raw is a request's params as its ServerStream read them.
type Raw struct {
	// JSON is the params as sent.
	JSON json.RawMessage
	// Long is what the stream's pass over the frame learned of the
	// params' longest string (zero: nothing).
	Long LongString
	// Content is the content the frame carried raw after the JSON
	// (protocol.HeaderRawLength), a slice of the frame's buffer; nil when
	// it carried none, empty (not nil) when it carried zero bytes. It
	// stands for a field of the params that JSON then leaves out
	// (protocol.RawContentFields); the stream knows nothing of methods and
	// hands it over whatever the method: the handler refuses what the
	// method does not take.
	Content []byte
	// frame is the buffer the request's frame was read into, which JSON
	// and Long are slices of.
	frame *[]byte
}

// Release hands the buffer the request was read into back, for a later
// frame to be read into. Call it at most once, when nothing refers to the
// params any more: neither JSON nor anything decoded from it that shares
// its bytes (an append's chunk does, until the engine's Append returns).
// Never calling it is safe: the buffer is then garbage.
func (r Raw) Release() { putBody(r.frame) }

// ServerStream is a jsonrpc2.ObjectStream for LSP-style Content-Length
// frames that never reads more than its limits allow, answers malformed
// messages as JSON-RPC 2.0 says instead of dropping the connection, echoes
// request ids exactly as sent, and stops reading while too many requests
// (or request bytes) are unanswered.
//
// jsonrpc2 holds ids as uint64 (so -1 came back as 18446744073709551615,
// and 1.5 or 2^64 closed the connection): every request id is replaced on
// read by a synthetic one and put back, byte for byte, when the reply is
// written.
type ServerStream struct {
	rwc    io.ReadWriteCloser
	r      *bufio.Reader
	limits Limits
	log    *slog.Logger
	// lastID numbers the requests read (Request.ID); read loop only.
	lastID uint64
	// current is the request ReadObject handed jsonrpc2 a placeholder
	// for, until the handler takes it (Take); read loop only.
	current    Request
	hasCurrent bool
	// decoded is what jsonrpc2 decoded the placeholder to, the first
	// time, for the later ones (handOver); read loop only.
	decoded reflect.Value
	// readDeadline is set while the connection has a read deadline set.
	readDeadline bool
	// onFrame, if set, is told when a frame starts to arrive.
	onFrame func()
	// onCancel, if set, is told the Request.ID of each request its
	// client cancels.
	onCancel func(id uint64)

	closed    chan struct{}
	closeOnce sync.Once
	// freed wakes the read loop, waiting for room, when a reply is written.
	freed chan struct{}

	// wmu keeps frames whole on the wire: replies are written from many
	// handler goroutines.
	wmu sync.Mutex
	// sending is the message jsonrpc2 showed OnSend and is about to hand
	// WriteObject; guarded by the Conn's send lock, which it holds from
	// one to the other.
	sending outgoing
	// replies is the buffer of the last reply written, for the next;
	// guarded by wmu.
	replies []byte

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
	// The id as sent: in short, when it fits (numbers, and most
	// strings), else in long. Either is a copy: the frame it was read
	// from is read into again once the request is served.
	short  [maxShortID]byte
	nshort uint8
	long   json.RawMessage
	size   int64
}

// maxShortID is the longest id kept in a pending request itself.
const maxShortID = 22

func newPending(id json.RawMessage, size int64) pending {
	p := pending{size: size}
	if len(id) <= maxShortID {
		p.nshort = uint8(copy(p.short[:], id))
	} else {
		p.long = bytes.Clone(id)
	}
	return p
}

// sent returns p's id as sent.
func (p *pending) sent() json.RawMessage {
	if p.long != nil {
		return p.long
	}
	return p.short[:p.nshort]
}

// Limits bound what one connection may make the daemon hold.
type Limits struct {
	// MaxMessage is the largest Content-Length read.
	MaxMessage int64
	// MaxInflight and MaxInflightBytes bound the requests read and not yet
	// answered, by count and by frame bytes; one request is always let in,
	// however large (up to MaxMessage).
	MaxInflight      int
	MaxInflightBytes int64
	// Total, if set, bounds the same bytes across every connection.
	Total *Budget
	// WriteTimeout bounds how long a reply may wait for a client that
	// does not read; the connection is closed then (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
	// HeaderTimeout, if set, bounds a frame's header from its first byte,
	// and its body from the header's end (bodyTimeoutBase, and a second
	// more per bodyBytesPerSecond): a client that starts a frame and
	// stalls loses its connection instead of holding its room.
	HeaderTimeout time.Duration
}

// readBuffer is the size of a connection's read buffer. A frame that fits
// in it, header and body, is read in one system call: an append of 4 KiB
// (a frame of about 4.2 KiB) took two, and a third to find nothing more.
// Bodies larger than it are read straight into their own buffer past what
// it holds. It also bounds a header line.
const readBuffer = 16 << 10

// DefaultWriteTimeout is how long a reply may wait on a full socket. A
// client that reads none of its replies for that long loses its
// connection, and with it the room its requests held.
const DefaultWriteTimeout = time.Minute

// NewServerStream returns the stream of one connection, rwc, read within
// limits; its refusals and timeouts are logged to log (nil: not logged).
// The handler given jsonrpc2 with it takes each request from it (Take).
func NewServerStream(rwc io.ReadWriteCloser, limits Limits, log *slog.Logger) *ServerStream {
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
	return &ServerStream{
		rwc:    rwc,
		r:      bufio.NewReaderSize(rwc, readBuffer),
		limits: limits,
		log:    log,
		closed: make(chan struct{}),
		freed:  make(chan struct{}, 1),
		ids:    make(map[uint64]pending),
	}
}

// ReadObject implements jsonrpc2.ObjectStream. It returns the next request
// the handler should see; messages that are not valid requests are answered
// here and skipped. An error closes the connection.
func (s *ServerStream) ReadObject(v any) error {
	for {
		if err := s.admit(func() bool { return s.inflight < s.limits.MaxInflight }, 1, 0); err != nil {
			return err
		}
		hdr, err := s.nextHeader()
		length := hdr.length
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
		var frame *[]byte
		if err == nil {
			s.bodyDeadline(length)
			frame, err = readPooledBody(s.r, length)
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
		body, content := *frame, []byte(nil)
		if hdr.raw >= 0 {
			// Never nil, even when empty: zero bytes sent raw are an
			// empty content, not none. The JSON ends where the content
			// starts, its capacity too, so that nothing written to it
			// reaches the content.
			n := length - hdr.raw
			body, content = (*frame)[:n:n], (*frame)[n:]
		}
		msg, perr := parseMessage(body)
		if perr != nil {
			s.release(length)
			s.log.Debug("answering a malformed message", "reason", perr.Data.Reason, "err", perr.Message)
			err := s.writeError(msg.id, perr)
			// Not before: msg.id is a part of the frame.
			putBody(frame)
			if err != nil {
				return err
			}
			continue
		}
		if msg.id == nil {
			// Notifications are never answered, so they hold no room; their
			// params are dropped once read (only a cancellation has any),
			// and the handler never sees one: there is nothing it could
			// do with one but ignore it.
			if msg.method == protocol.CancelRequest {
				s.cancel(msg.params)
			}
			putBody(frame)
			s.release(length)
			continue
		}
		s.lastID++
		id := s.lastID
		s.mu.Lock()
		s.ids[id] = newPending(msg.id, length)
		s.mu.Unlock()
		req := Request{ID: id, Method: msg.method}
		if msg.params != nil || content != nil {
			req.Params = Raw{JSON: msg.params, Long: msg.long, Content: content, frame: frame}
		} else {
			// Nothing of the frame is kept: the id and method are
			// copies.
			putBody(frame)
		}
		s.current, s.hasCurrent = req, true
		if err = s.handOver(v); err != nil {
			// Cannot happen; if it does, the connection ends rather
			// than a request going unanswered forever.
			s.current, s.hasCurrent = Request{}, false
			s.forget(id)
			return fmt.Errorf("handing a request to jsonrpc2: %w", err)
		}
		return nil
	}
}

// placeholder is what jsonrpc2 is handed for each request: a method (empty)
// and nothing else, the least it decodes as a request
// (TestJSONRPC2DecodesThePlaceholder). Its Handler takes the request
// itself from the stream (Take). Without an id, jsonrpc2 takes it for a
// notification, which changes nothing it does: replies are sent with the
// stream's id (Request.RPCID), which jsonrpc2 does not check.
var placeholder = []byte(`{"method":""}`)

// handOver stores the placeholder in v, the message jsonrpc2 gave
// ReadObject to fill. The placeholder is the same for every request, and so
// is what jsonrpc2 decodes it to: it is decoded once, by v's own
// UnmarshalJSON, and each later v of that type is given a copy of that
// first message (reflect: v's type is jsonrpc2's, unexported), which takes
// no allocation, where decoding it took 20 and 7-12% of the daemon's CPU
// per append. Every request of the connection is then handed to the
// Handler as one and the same *jsonrpc2.Request, the placeholder's, which
// no one writes to: jsonrpc2 only passes it on, and the handler takes the
// request from the stream (Take). A v of another type (jsonrpc2 changed)
// is decoded as ever (TestServerStreamHandsJSONRPC2OneMessage).
func (s *ServerStream) handOver(v any) error {
	rv := reflect.ValueOf(v)
	if s.decoded.IsValid() && rv.Type() == s.decoded.Type() {
		rv.Elem().Set(s.decoded.Elem())
		return nil
	}
	// jsonrpc2's message type decodes itself; encoding/json around it
	// would only scan the placeholder once more.
	var err error
	if u, ok := v.(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(placeholder)
	} else {
		err = json.Unmarshal(placeholder, v)
	}
	if err != nil {
		return err
	}
	if rv.Kind() == reflect.Pointer && rv.Elem().Kind() == reflect.Struct {
		s.decoded = reflect.New(rv.Type().Elem())
		s.decoded.Elem().Set(rv.Elem())
	}
	return nil
}

// Take returns the request whose placeholder ReadObject handed jsonrpc2
// last, and forgets it: false when there is none, or it was taken. Call it
// from the jsonrpc2.Handler, which jsonrpc2 calls on its read loop right
// after ReadObject returns (TestJSONRPC2HandlesOnTheReadLoop): never from
// a handler wrapped in jsonrpc2.AsyncHandler, whose goroutine may run after
// the next request is read. Each request taken must be answered, through
// the jsonrpc2.Conn with the request's RPCID: until then it holds its room.
func (s *ServerStream) Take() (Request, bool) {
	r, ok := s.current, s.hasCurrent
	s.current, s.hasCurrent = Request{}, false
	return r, ok
}

// admit waits until fits (called with s.mu held) allows a request in, then
// counts it: n requests of size bytes.
func (s *ServerStream) admit(fits func() bool, n int, size int64) error {
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
func (s *ServerStream) takeTotal(size int64) error {
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
func (s *ServerStream) release(size int64) {
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

// forget drops synthetic id syn and frees its room; an id this stream
// never assigned is ignored.
func (s *ServerStream) forget(syn uint64) {
	s.mu.Lock()
	p, ok := s.ids[syn]
	delete(s.ids, syn)
	s.mu.Unlock()
	if ok {
		s.release(p.size)
	}
}

// OnSend is the jsonrpc2.ConnOpt to give the jsonrpc2.Conn of this stream:
// it shows the stream each message the Conn is about to write as the
// typed value it is, so that WriteObject encodes it once, from that value,
// with the client's id, instead of reading back the JSON jsonrpc2 would
// marshal (a reply's result copied and checked three times over, then
// parsed again to find its id). jsonrpc2 calls it, then WriteObject, under
// one lock of the Conn's, so nothing comes in between (pinned by
// TestJSONRPC2ShowsEachMessageBeforeWritingIt).
func (s *ServerStream) OnSend() jsonrpc2.ConnOpt {
	return jsonrpc2.OnSend(func(req *jsonrpc2.Request, resp *jsonrpc2.Response) {
		s.sending = outgoing{req: req, resp: resp}
	})
}

// outgoing is the message jsonrpc2 is about to write: a response, or a
// request (the daemon's notifications).
type outgoing struct {
	req  *jsonrpc2.Request
	resp *jsonrpc2.Response
}

// WriteObject implements jsonrpc2.ObjectStream: it puts back the id the
// client sent and frees the request's slot once the reply is written (or
// failed), not before, so replies a client does not read stay bounded too.
func (s *ServerStream) WriteObject(obj any) error {
	msg := s.sending
	s.sending = outgoing{}
	switch o := obj.(type) {
	case *jsonrpc2.Response:
		msg = outgoing{resp: o}
	case *jsonrpc2.Request:
		msg = outgoing{req: o}
	}
	switch {
	case msg.resp != nil:
		return s.writeResponse(msg.resp)
	case msg.req != nil && msg.req.Notif:
		data, err := encodeNotification(msg.req)
		if err != nil {
			return err
		}
		return s.writeFrame(data)
	}
	// Without OnSend: what jsonrpc2 marshals, read back.
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	syn, reply, ok := s.reply(data)
	if !ok {
		return s.writeFrame(data)
	}
	err = s.writeFrame(reply)
	s.forget(syn)
	return err
}

// writeResponse writes resp, a reply to a request of this stream, with
// the id its client sent, and frees the request's room.
func (s *ServerStream) writeResponse(resp *jsonrpc2.Response) error {
	var syn uint64
	var id json.RawMessage
	if !resp.ID.IsString {
		syn = resp.ID.Num
		s.mu.Lock()
		p, known := s.ids[syn]
		s.mu.Unlock()
		if known {
			id = p.sent()
		}
	}
	if id == nil {
		// Not a request of this stream's (none is answered so): written
		// with the library's id, as jsonrpc2 would.
		b, err := resp.ID.MarshalJSON()
		if err != nil {
			return err
		}
		id = b
	}
	err := s.writeWith(func() error {
		// Encoded under the write lock, which guards the kept buffer:
		// replies are written from many goroutines, through the Conn
		// or not (WriteResponse).
		out, err := encodeResponse(s.replies, id, resp)
		if err != nil {
			return err
		}
		_, err = s.rwc.Write(sealFrame(out))
		if cap(out) <= maxKeptReply {
			s.replies = out[:0]
		}
		return err
	})
	s.forget(syn)
	return err
}

// WriteResponse writes resp, the reply to a request of this stream
// (resp.ID is its Request.RPCID), as WriteObject does when the
// jsonrpc2.Conn hands it over, without the Conn: the handler builds the
// Response and the stream encodes it once, with the client's id, with no
// allocation of jsonrpc2's in between. It fails with jsonrpc2.ErrClosed
// once the stream is closed, as the Conn's replies do.
func (s *ServerStream) WriteResponse(resp *jsonrpc2.Response) error {
	select {
	case <-s.closed:
		if !resp.ID.IsString {
			s.forget(resp.ID.Num)
		}
		return jsonrpc2.ErrClosed
	default:
	}
	return s.writeResponse(resp)
}

// maxKeptReply bounds the buffer a stream keeps for its next reply: an
// append's and every other small one's, not a listing of megabytes.
const maxKeptReply = 4 << 10

// encodeResponse is the frame of resp with id in place of its own, to be
// sealed (sealFrame): header and body in one buffer (one write, and no
// allocation where buf, which it may reuse, is large enough), a result as
// the handler or jsonrpc2 encoded it once (Response.SetResult), or an
// error.
func encodeResponse(buf []byte, id json.RawMessage, resp *jsonrpc2.Response) ([]byte, error) {
	member, value := `,"result":`, []byte(nil)
	switch {
	case resp.Error != nil:
		b, err := json.Marshal(resp.Error)
		if err != nil {
			return nil, err
		}
		member, value = `,"error":`, b
	case resp.Result != nil && len(*resp.Result) > 0:
		value = *resp.Result
	default:
		return nil, errors.New("jsonrpc: a response with neither a result nor an error")
	}
	out := reuseFrame(buf, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+len(value))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, member...)
	out = append(out, value...)
	return append(out, '}'), nil
}

// encodeNotification is the JSON of a notification: a method, its params
// as jsonrpc2 encoded them once (Request.SetParams), and no id.
func encodeNotification(req *jsonrpc2.Request) ([]byte, error) {
	method, err := json.Marshal(req.Method)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(method)+64)
	if req.Params != nil {
		out = slices.Grow(out, len(*req.Params))
	}
	out = append(out, `{"jsonrpc":"2.0","method":`...)
	out = append(out, method...)
	if req.Params != nil {
		out = append(out, `,"params":`...)
		out = append(out, *req.Params...)
	}
	return append(out, '}'), nil
}

// reply rewrites a response jsonrpc2 wrote to a request of this stream
// with the id the client sent. It reads data as the JSON-RPC response it
// is, whatever the library's layout: an "id" member holding a synthetic id
// of this stream, and a "result" or an "error". Anything else (the
// daemon's notifications: a "method" and no "id") is not a reply.
func (s *ServerStream) reply(data []byte) (uint64, []byte, bool) {
	ms, ok := readMembers(data)
	if !ok {
		return 0, nil, false
	}
	id, result, rerr := ms.get("id"), ms.get("result"), ms.get("error")
	if id == nil || ms.get("method") != nil || (result == nil) == (rerr == nil) {
		return 0, nil, false
	}
	syn, err := strconv.ParseUint(string(id), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	s.mu.Lock()
	p, known := s.ids[syn]
	s.mu.Unlock()
	if !known {
		return 0, nil, false
	}
	member, value := `,"result":`, result
	if rerr != nil {
		member, value = `,"error":`, rerr
	}
	out := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(p.sent())+len(value))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, p.sent()...)
	out = append(out, member...)
	out = append(out, value...)
	return syn, append(out, '}'), true
}

// writeError answers with e; a nil id is written as null.
func (s *ServerStream) writeError(id json.RawMessage, e *protocol.Error) error {
	data, err := EncodeErrorReply(id, e)
	if err != nil {
		return err
	}
	return s.writeFrame(data)
}

// writeFrame writes data as one frame.
func (s *ServerStream) writeFrame(data []byte) error {
	return s.writeWith(func() error { return WriteFrame(s.rwc, data) })
}

// writeWith runs write, which writes one frame, alone on the connection
// and within the write timeout.
func (s *ServerStream) writeWith(write func() error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	dl, timed := s.rwc.(interface{ SetWriteDeadline(time.Time) error })
	if timed {
		dl.SetWriteDeadline(time.Now().Add(s.limits.WriteTimeout))
	}
	err := write()
	if timed && err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			s.log.Info("closing a connection that did not read its replies", "timeout", s.limits.WriteTimeout)
			s.Close()
		}
	}
	return err
}

// OnFrame sets f to be called each time a frame starts to arrive (its
// first byte read), as a sign of life of the connection. Call it before
// the stream is handed to jsonrpc2.
func (s *ServerStream) OnFrame(f func()) { s.onFrame = f }

// OnCancel sets f to be called, on the read loop, when the client cancels
// a request of its own that is not answered yet (protocol.CancelRequest):
// f is given the request's Request.ID. jsonrpc2 has no
// cancellation of its own. Call it before the stream is handed to
// jsonrpc2.
func (s *ServerStream) OnCancel(f func(id uint64)) { s.onCancel = f }

// cancel finds the unanswered request whose id, as sent, is the "id" of
// params, a cancellation's, and tells onCancel. An id is matched byte for
// byte as the client wrote it in both messages; one that matches no
// request (answered already, or never sent) is ignored, as LSP asks.
func (s *ServerStream) cancel(params json.RawMessage) {
	if s.onCancel == nil || params == nil {
		return
	}
	ms, ok := readMembers(params)
	if !ok {
		return
	}
	id := ms.get("id")
	if id == nil {
		return
	}
	s.mu.Lock()
	var syn uint64
	found := false
	for k, p := range s.ids {
		if string(p.sent()) == string(id) {
			syn, found = k, true
			break
		}
	}
	s.mu.Unlock()
	if found {
		s.onCancel(syn)
	}
}

// Waiting reports whether the stream has read a request it has not
// answered yet.
func (s *ServerStream) Waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids) > 0
}

// Alone reports whether the request being handed to the handler is the
// only one of this connection: no other is read and unanswered, and no
// byte of a next one is buffered. A handler that serves such a request on
// the read loop, instead of handing it to a goroutine of its own, keeps no
// other request of the connection waiting. Call it only from the Handle
// that jsonrpc2 calls on the read loop, which owns the stream's reader.
func (s *ServerStream) Alone() bool {
	if s.r.Buffered() > 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids) == 1
}

// How long a frame's body may take once its header is read, with
// Limits.HeaderTimeout set: 30 s plus one second per MiB. A body being
// read holds its share of the daemon-wide in-flight bytes, which other
// connections wait for.
const (
	bodyTimeoutBase    = 30 * time.Second
	bodyBytesPerSecond = 1 << 20
)

// nextHeader waits for the next frame (awaitFrame), then reads its header.
func (s *ServerStream) nextHeader() (frameHeader, error) {
	if err := s.awaitFrame(); err != nil {
		return frameHeader{length: -1, raw: -1}, err
	}
	return readFrameHeader(s.r, s.limits.MaxMessage)
}

// awaitFrame waits, with no deadline, for the first byte of the next
// frame, then gives its header limits.HeaderTimeout to arrive. It returns
// the read error that ends the connection.
//
// A deadline is set only where a read may wait: a header that arrived
// whole with the frame's first bytes, as clients write it, needs none, so
// that the frames of an append usually cost no deadline at all, where
// each deadline set or cleared is a timer of the runtime's changed.
func (s *ServerStream) awaitFrame() error {
	d, ok := s.rwc.(interface{ SetReadDeadline(time.Time) error })
	timed := ok && s.limits.HeaderTimeout > 0
	if timed && s.readDeadline {
		d.SetReadDeadline(time.Time{})
		s.readDeadline = false
	}
	if _, err := s.r.Peek(1); err != nil {
		return err
	}
	if s.onFrame != nil {
		s.onFrame()
	}
	if timed && !s.headerBuffered() {
		d.SetReadDeadline(time.Now().Add(s.limits.HeaderTimeout))
		s.readDeadline = true
	}
	return nil
}

// headerBuffered reports whether the reader holds a whole header already,
// its blank line included.
func (s *ServerStream) headerBuffered() bool {
	b, _ := s.r.Peek(s.r.Buffered())
	return bytes.Contains(b, []byte("\r\n\r\n"))
}

// bodyDeadline gives a frame's body of length bytes its time to arrive,
// unless it is in the reader already.
func (s *ServerStream) bodyDeadline(length int64) {
	d, ok := s.rwc.(interface{ SetReadDeadline(time.Time) error })
	if !ok || s.limits.HeaderTimeout <= 0 || int64(s.r.Buffered()) >= length {
		return
	}
	d.SetReadDeadline(time.Now().Add(bodyTimeoutBase + time.Duration(length/bodyBytesPerSecond)*time.Second))
	s.readDeadline = true
}

// Close implements jsonrpc2.ObjectStream; it also wakes a read loop waiting
// for a free slot.
func (s *ServerStream) Close() error {
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

// logFrameTimeout logs a connection closed because its frame did not
// arrive in time.
func (s *ServerStream) logFrameTimeout(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		s.log.Info("closing a connection whose frame did not arrive in time", "header_timeout", s.limits.HeaderTimeout)
	}
}
