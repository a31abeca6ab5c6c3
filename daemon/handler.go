package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/checkpoint"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// handler decodes JSON-RPC requests, calls the session engine and encodes
// its answers. It holds no logic of its own beyond dispatch and ordering.
type handler struct {
	mgr    *session.Manager
	turns  *checkpoint.Engine
	status func() protocol.StatusResult
	log    *slog.Logger
	order  *sessionOrder
	owners *owners
	trace  trace.Recorder
	// appends, when the recorder has it, takes acknowledged appends to
	// fold them: one event per append cost more CPU (its JSON, its store
	// write, their garbage) than the rest of the trace put together.
	appends trace.AppendRecorder
	// rejected records the requests that failed, at a bounded rate: their
	// fields come from the client, and a flood of them must not fill the
	// store.
	rejected trace.Recorder
	// traces answers trace.list and trace.follow; nil when tracing is off.
	traces *trace.Tracer
	// inflight lets shutdown wait for requests already being handled, so
	// an append that started is acknowledged or fails before the store closes.
	inflight *sync.WaitGroup
	// roots allows directories while the daemon runs.
	roots *rootAdder
	// heavy bounds the replies that may be megabytes (heavy.go).
	heavy heavyGate
	// follows bounds each connection's trace.follow subscriptions.
	follows followCount
	// workers serve the requests not served on their read loop.
	workers *workers
}

// handle is called from the read loop of connection c (rpc to jsonrpc2)
// with the request read (req): it decodes the params and fixes the
// request's place in its session's queue, then serves it on a goroutine of
// its own, or right here, on the read loop, when that keeps nothing waiting
// (direct). ctx is jsonrpc2's for the connection, done when it closes: the
// handler's, so that work for a client that is gone can stop.
func (h *handler) handle(ctx context.Context, c *conn, rpc *jsonrpc2.Conn, req incoming) {
	// In the memory the connection's last request served on the read
	// loop left, when it left any.
	r := c.spare
	if r == nil {
		r = new(served)
	}
	c.spare = nil
	*r = served{h: h, ctx: ctx, c: c, rpc: rpc, id: req.id, method: shortMethod(req.method)}
	r.room.lastSession = &c.lastSession
	// Params are decoded once, here: the session key that orders the
	// request comes from them, and a 1 KiB chunk costs more to scan than
	// anything else the read loop does.
	m, params, raw, decodeErr := h.decode(req, &r.room)
	var t turn
	key := ""
	if decodeErr == nil {
		key = m.session(params)
	}
	if key != "" {
		t = h.order.enqueue(key)
	}
	// A heavy read may be cancelled by its client as well as stopped by
	// its connection's end; the context is made here, on the read loop,
	// so that a cancellation read next finds it.
	reqCtx, finished := ctx, func() {}
	if decodeErr == nil && m.heavy && !req.id.IsString {
		reqCtx, finished = c.cancellable(ctx, req.id.Num)
	}
	r.reqCtx, r.finished = reqCtx, finished
	r.m, r.params, r.raw, r.err, r.key, r.turn = m, params, raw, decodeErr, key, t
	h.inflight.Add(1)
	if h.direct(c, m, params, decodeErr, t) {
		r.serve()
		// Served, and replied to: the connection's next request is
		// served in the same memory (a direct method keeps nothing of
		// its request past its handler's return).
		r.release()
		c.spare = r
		return
	}
	h.workers.run(r)
}

// release clears r once it is served, for its connection's next request.
// Under the race detector (the tests' runs) its contexts are left poisoned
// until then: anything that kept one of a request served on the read loop
// panics when it uses it, instead of reading the next request's.
func (r *served) release() {
	*r = served{}
	if poisonServed {
		r.ctx, r.reqCtx, r.tctx.Context = servedContext{}, servedContext{}, servedContext{}
	}
}

// servedContext is the context a served request's memory holds until the
// next request: every use of it panics.
type servedContext struct{}

func (servedContext) Deadline() (time.Time, bool) { panic(errServedUsed) }
func (servedContext) Done() <-chan struct{}       { panic(errServedUsed) }
func (servedContext) Err() error                  { panic(errServedUsed) }
func (servedContext) Value(any) any               { panic(errServedUsed) }

var errServedUsed = errors.New("daemon: the context of a request was used after the request was served")

// incoming is a request as the handler takes it: from the connection's
// stream (jsonrpc.ServerStream.Take), which jsonrpc2 is handed only a
// placeholder of, or from jsonrpc2's Request where there is no such
// stream.
type incoming struct {
	id     jsonrpc2.ID
	method string
	// params is the params as sent; JSON nil when absent or null.
	params jsonrpc.Raw
}

// incomingOf is req, read by jsonrpc2 itself: false for a notification.
func incomingOf(req *jsonrpc2.Request) (incoming, bool) {
	if req.Notif {
		return incoming{}, false
	}
	in := incoming{id: req.ID, method: req.Method}
	if req.Params != nil {
		in.params.JSON = *req.Params
	}
	return in, true
}

// direct reports whether a request is served on its connection's read loop
// rather than on a goroutine of its own: a quick method (an append: a
// journal write and its sync), decoded, that waits for no earlier request
// of its session, on a connection with nothing else read or arriving, and
// not a large chunk (pipelined). The connection's next request is not read
// meanwhile; the client is waiting for this reply anyway. The goroutine it
// saves is most of the cost of an append beyond its sync: its start, the
// thread the runtime wakes to run it, its stack grown anew, and the read
// loop parked and woken again. Its memory (served) is the connection's
// next request's once it is answered.
func (h *handler) direct(c *conn, m method, params any, decodeErr error, t turn) bool {
	return decodeErr == nil && m.direct && t.wait == nil && c.stream != nil && c.stream.Alone() && !pipelined(params)
}

// served is one request being served, from its decoded params to its
// reply.
type served struct {
	h *handler
	// ctx is the connection's; reqCtx the request's, which its client
	// may cancel when it is heavy; finished releases reqCtx.
	ctx, reqCtx context.Context
	finished    func()
	c           *conn
	rpc         *jsonrpc2.Conn
	m           method
	params      any
	// raw is the params as read, in the frame's buffer, which params may
	// share (an append's chunk).
	raw jsonrpc.Raw
	// err is the decoding's, if it failed.
	err    error
	key    string
	turn   turn
	id     jsonrpc2.ID
	method string
	// resp and result are the reply, once encoded; an append's result is
	// encoded into resultRoom.
	resp       jsonrpc2.Response
	result     json.RawMessage
	resultRoom [192]byte
	// room holds an append's params and result (requestRoom).
	room requestRoom
	// turnReleased: the session's next request was let go (releaseTurn).
	turnReleased bool
	// tctx is reqCtx knowing r, for the handler (pipeline.go).
	tctx turnContext
}

// serve serves r in its turn and replies.
func (r *served) serve() {
	h, ctx, reqCtx, m, method := r.h, r.ctx, r.reqCtx, r.m, r.method
	defer h.inflight.Done()
	defer r.finished()
	if r.turn.wait != nil {
		<-r.turn.wait
	}
	err := r.err
	if err == nil && m.heavy {
		release, ok := h.heavy.acquire(reqCtx, r.c)
		if ok {
			defer release()
		} else {
			err = reqCtx.Err()
		}
	}
	start := time.Now()
	var (
		result   any
		owned    ownedIDs
		panicked bool
	)
	if err == nil {
		r.tctx = turnContext{Context: reqCtx, r: r}
		result, owned, panicked, err = h.serve(&r.tctx, r.c.peer(), m, r.params, &r.room)
	}
	owned.each(func(id string) { h.owners.claim(id, r.c) })
	// The reply may wait on a client that does not read: the session's
	// next request must not wait with it, and the params (a chunk of up
	// to --max-chunk-bytes) must not stay alive meanwhile.
	r.releaseTurn()
	r.params = nil
	if !panicked {
		// The engine is done with the params, and nothing it returned
		// shares their bytes (results and errors are its own): the
		// frame's buffer goes back for a later frame. After a panic
		// the engine may not have finished with them, and it is left
		// to the collector.
		r.raw.Release()
	}
	r.raw = jsonrpc.Raw{}
	if err != nil && reqCtx.Err() != nil && errors.Is(err, reqCtx.Err()) {
		if ctx.Err() != nil {
			// A read that stopped because its client went away: there
			// is no one to answer, and it failed nothing.
			h.log.Info("request abandoned: its connection closed", "method", method, "after", time.Since(start))
			return
		}
		h.log.Info("request cancelled by its client", "method", method, "after", time.Since(start))
		err = errCancelled(method)
	}
	h.traceRequest(method, r.key, result, owned, err, start)
	if err != nil {
		rpcErr := toRPCError(err)
		h.log.Debug("request failed", "method", method, "code", rpcErr.Code, "err", rpcErr.Message)
		r.resp = jsonrpc2.Response{ID: r.id, Error: rpcErr}
		if rerr := r.send(); rerr != nil && !errors.Is(rerr, jsonrpc2.ErrClosed) {
			h.log.Warn("replying", "method", method, "err", rerr)
		}
		return
	}
	if h.log.Enabled(ctx, slog.LevelDebug) {
		h.log.Debug("request", "method", method, "duration", time.Since(start))
	}
	// The result is encoded here, once, rather than by Conn.Reply's
	// encoding/json: an append's by hand (encodeResult).
	// The response and its result live in r, allocated already.
	r.resp.ID = r.id
	if r.result, err = encodeResult(r.resultRoom[:0], result); err == nil {
		r.resp.Result = &r.result
	} else {
		h.log.Error("encoding a reply", "method", method, "err", err)
		r.resp.Error = toRPCError(fmt.Errorf("encoding the reply to %s: %w", method, err))
	}
	if rerr := r.send(); rerr != nil && !errors.Is(rerr, jsonrpc2.ErrClosed) {
		h.log.Warn("replying", "method", method, "err", rerr)
	}
}

// send writes r.resp, r's reply: through its connection's stream, which
// encodes jsonrpc2's Response itself (jsonrpc.ServerStream.WriteResponse),
// or through the Conn where there is no such stream. The Conn would only
// wrap it in a message of its own, an allocation, and hand it to the same
// stream.
func (r *served) send() error {
	if r.c.stream != nil {
		return r.c.stream.WriteResponse(&r.resp)
	}
	return r.rpc.SendResponse(r.ctx, &r.resp)
}

// serve calls m's handler. A panic in it (a bug) is recovered: the request
// is answered internal_error, the stack is logged, and the connection and
// the daemon go on serving. What the handler did before it panicked stays
// done: every write the engine acknowledges is committed first, so the
// client asks where the session stands rather than assuming either way.
func (h *handler) serve(ctx context.Context, peer Peer, m method, params any, room *requestRoom) (result any, owned ownedIDs, panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, owned, panicked, err = nil, ownedIDs{}, true, h.recovered(m.name, r)
		}
	}()
	failpoint.Hit("daemon.serve")
	result, owned, err = m.serve(h, ctx, peer, params, room)
	return result, owned, false, err
}

// recovered logs a panic recovered while serving method, with its stack,
// and returns the error that answers the request.
func (h *handler) recovered(method string, r any) error {
	log := h.log
	if log == nil {
		log = slog.Default()
	}
	log.Error("a request panicked; it is answered internal_error and the daemon goes on",
		"method", shortMethod(method), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	e := protocol.Errorf(protocol.CodeInternalError, protocol.ReasonInternal,
		"internal error: the daemon failed while serving %s (a bug, logged with its stack by oriond); "+
			"it may have been done in part: ask session.get or tx.get where things stand before retrying", shortMethod(method))
	e.Data.Method = shortMethod(method)
	return e
}

// maxRejectedError bounds the error message kept in the trace event of a
// rejected request: room for any message the daemon writes, not for a
// client's payload quoted in one.
const maxRejectedError = 1 << 10

// shortMethod is a method name as it may be logged and traced: one over
// protocol.MaxMethodBytes is refused, and kept only cut and marked.
func shortMethod(method string) string {
	return trace.CleanString(method, protocol.MaxMethodBytes)
}

// appendResultOf returns result as an append's, whether it is one or
// points to one (keepsIn).
func appendResultOf(result any) (protocol.AppendResult, bool) {
	switch r := result.(type) {
	case protocol.AppendResult:
		return r, true
	case *protocol.AppendResult:
		return *r, true
	}
	return protocol.AppendResult{}, false
}

// traceRequest records one handled request: which, for which session, how
// long, and how it failed. An acknowledged append goes to h.appends, when
// there is one, to be folded with the session's other appends. A failed
// request goes through the rate limit of h.rejected, with its client-given
// fields bounded.
func (h *handler) traceRequest(method, key string, result any, owned ownedIDs, err error, start time.Time) {
	took := time.Since(start)
	if ack, ok := appendResultOf(result); ok && err == nil {
		a := trace.Append{SessionID: ack.SessionID, Start: start, Duration: took,
			Seq: ack.Seq, Bytes: ack.Bytes, EndMarkerSeen: ack.EndMarkerSeen}
		if h.appends != nil {
			h.appends.RecordAppend(a)
			return
		}
		h.trace.Record(trace.Event{Time: start, Type: protocol.TraceRequest, SessionID: ack.SessionID, Method: method,
			Fields: map[string]any{"duration_ms": float64(took.Microseconds()) / 1000,
				"seq": ack.Seq, "bytes": ack.Bytes, "end_marker_seen": ack.EndMarkerSeen}})
		return
	}
	if id, ok := owned.single(); key == "" && ok {
		key = id
	}
	if err == nil {
		h.trace.Record(trace.Event{Time: start, Type: protocol.TraceRequest, SessionID: key, Method: method,
			Attrs: []trace.Attr{trace.Millis("duration_ms", took)}})
		return
	}
	fields := map[string]any{"duration_ms": float64(took.Microseconds()) / 1000}
	ev := trace.Event{Time: start, Type: protocol.TraceRequest, SessionID: key, Method: method, Fields: fields}
	rpcErr := toRPCError(err)
	fields["error_code"] = rpcErr.Code
	fields["error"] = trace.CleanString(rpcErr.Message, maxRejectedError)
	var pe *protocol.Error
	if errors.As(err, &pe) {
		fields["reason"] = pe.Data.Reason
	}
	h.rejected.Record(ev)
}

// decode finds req's method in the table and decodes its params. Absent
// or null params decode as an empty object, so a missing required field is
// reported by name rather than as "no params". A panic while decoding (a
// bug) is recovered as in serve. raw is the params as the stream read
// them, to be released once the request is served.
func (h *handler) decode(req incoming, room *requestRoom) (m method, params any, raw jsonrpc.Raw, err error) {
	raw = req.params
	defer func() {
		if r := recover(); r != nil {
			// Not released: the decoder may have kept a part of them.
			params, raw, err = nil, jsonrpc.Raw{}, h.recovered(req.method, r)
		}
	}()
	if err := protocol.CheckMethod(req.method); err != nil {
		return m, nil, raw, err
	}
	m, ok := methods[req.method]
	if !ok {
		e := protocol.Errorf(protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod,
			"unknown method %q; daemon.status lists the methods this daemon serves", req.method)
		e.Data.Method = req.method
		return m, nil, raw, e
	}
	in := raw
	if in.JSON == nil || string(in.JSON) == "null" {
		in.JSON, in.Long = json.RawMessage("{}"), jsonrpc.LongString{}
	}
	if in.Content != nil {
		if m.decodeRaw == nil {
			return m, nil, raw, errRawNotTaken(req.method)
		}
		params, err = m.decodeRaw(in.JSON, in.Content, room)
	} else {
		params, err = m.decode(in.JSON, in.Long, room)
	}
	if err != nil {
		return m, nil, raw, err
	}
	return m, params, raw, nil
}

// errRawNotTaken refuses content sent raw to a method that takes none.
func errRawNotTaken(method string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonRawContentNotTaken,
		"%s takes no raw content, but the frame carried some (%s); send its params as JSON only", method, protocol.HeaderRawLength)
	e.Data.Method = method
	return e
}

// decodeParams decodes the params of method into a *P with encoding/json,
// refuses text that is not valid Unicode and checks P's limits.
func decodeParams[P any](method string, raw json.RawMessage) (*P, error) {
	v := new(P)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, malformedParams(method, err)
	}
	// The frame reader hands over the params as the client sent them, so
	// text that is not valid Unicode is seen here; encoding/json replaced
	// it with U+FFFD in v.
	if !jsonstr.ValidText(raw) {
		return nil, errInvalidText(method, v)
	}
	if c, ok := any(v).(paramsChecker); ok {
		if err := c.Check(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// malformedParams is the error of params that do not decode, naming the
// field that did not where the decoder says.
func malformedParams(method string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
		"malformed params for %s: %v", method, err)
	e.Data.Method = method
	var typeErr *json.UnmarshalTypeError
	var semErr *jsonv2.SemanticError
	switch {
	case errors.As(err, &typeErr):
		e.Data.Field = typeErr.Field
	case errors.As(err, &semErr):
		e.Data.Field = strings.TrimPrefix(string(semErr.JSONPointer), "/")
	}
	return e
}

// toRPCError keeps an application error's code, reason and message; an
// unexpected error becomes an internal error that still says what failed.
func toRPCError(err error) *jsonrpc2.Error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		pe = protocol.Errorf(protocol.CodeInternalError, protocol.ReasonInternal, "internal error: %v", err)
	}
	rpcErr := &jsonrpc2.Error{Code: pe.Code, Message: pe.Message}
	rpcErr.SetError(pe.Data)
	return rpcErr
}

// errCancelled answers a request its client cancelled.
func errCancelled(method string) error {
	e := protocol.Errorf(protocol.CodeRequestCancelled, protocol.ReasonRequestCancelled,
		"%s was cancelled by its client (%s) before it was answered; nothing was changed", method, protocol.CancelRequest)
	e.Data.Method = method
	return e
}

// errTracingOff answers trace methods when oriond runs with --trace=false.
func errTracingOff(method string) error {
	e := protocol.Errorf(protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod,
		"%s: tracing is off in this daemon (oriond run --trace=false)", method)
	e.Data.Method = method
	return e
}
