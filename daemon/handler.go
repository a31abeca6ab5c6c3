package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// handler decodes JSON-RPC requests, calls the session engine and encodes
// its answers. It holds no logic of its own beyond dispatch and ordering.
type handler struct {
	mgr    *session.Manager
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
	// params holds the params of requests read by a frameStream; nil, or a
	// request it does not hold, means the params are in the request.
	params *paramStash
	// client names a connection's peer process, whose sessions the
	// per-client cap counts; nil counts none.
	client func(*jsonrpc2.Conn) string
}

// Handle is called from the connection's read loop: it only decodes the
// params, fixes the request's place in its session's queue and hands it to
// a goroutine.
func (h *handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		// No client notifications are defined yet; $/cancelRequest and
		// friends are ignored rather than answered, as JSON-RPC requires.
		return
	}
	// Params are decoded once, here: the session key that orders the
	// request comes from them, and a 1 KiB chunk costs more to scan than
	// anything else the read loop does.
	params, decodeErr := h.decodeParams(req)
	var wait <-chan struct{}
	done := func() {}
	key := sessionKey(req.Method, params)
	if key != "" {
		wait, done = h.order.enqueue(key)
	}
	method, id := shortMethod(req.Method), req.ID
	h.inflight.Add(1)
	go func() {
		defer h.inflight.Done()
		if wait != nil {
			<-wait
		}
		start := time.Now()
		var result any
		err := decodeErr
		if err == nil {
			result, err = h.dispatch(conn, method, params)
		}
		if err == nil {
			for _, id := range ownedSessions(result) {
				h.owners.claim(id, conn)
			}
		}
		// The reply may wait on a client that does not read: the session's
		// next request must not wait with it, and the params (a chunk of up
		// to --max-chunk-bytes) must not stay alive meanwhile.
		done()
		params = nil
		h.traceRequest(method, key, result, err, start)
		if err != nil {
			rpcErr := toRPCError(err)
			h.log.Debug("request failed", "method", method, "code", rpcErr.Code, "err", rpcErr.Message)
			if rerr := conn.ReplyWithError(ctx, id, rpcErr); rerr != nil && !errors.Is(rerr, jsonrpc2.ErrClosed) {
				h.log.Warn("replying", "method", method, "err", rerr)
			}
			return
		}
		h.log.Debug("request", "method", method, "duration", time.Since(start))
		if rerr := conn.Reply(ctx, id, result); rerr != nil && !errors.Is(rerr, jsonrpc2.ErrClosed) {
			h.log.Warn("replying", "method", method, "err", rerr)
		}
	}()
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

// traceRequest records one handled request: which, for which session, how
// long, and how it failed. An acknowledged append goes to h.appends, when
// there is one, to be folded with the session's other appends. A failed
// request goes through the rate limit of h.rejected, with its client-given
// fields bounded.
func (h *handler) traceRequest(method, key string, result any, err error, start time.Time) {
	took := time.Since(start)
	if ack, ok := result.(protocol.AppendResult); ok && err == nil {
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
	if ids := ownedSessions(result); key == "" && len(ids) == 1 {
		key = ids[0]
	}
	fields := map[string]any{"duration_ms": float64(took.Microseconds()) / 1000}
	ev := trace.Event{Time: start, Type: protocol.TraceRequest, SessionID: key, Method: method, Fields: fields}
	if err == nil {
		h.trace.Record(ev)
		return
	}
	rpcErr := toRPCError(err)
	fields["error_code"] = rpcErr.Code
	fields["error"] = trace.CleanString(rpcErr.Message, maxRejectedError)
	var pe *protocol.Error
	if errors.As(err, &pe) {
		fields["reason"] = pe.Data.Reason
	}
	h.rejected.Record(ev)
}

// sessionKey names the session a request is about, for ordering, from its
// decoded params.
func sessionKey(method string, params any) string {
	switch method {
	case protocol.MethodSessionAppend, protocol.MethodSessionFinalize, protocol.MethodSessionAbort,
		protocol.MethodSessionResume, protocol.MethodSessionContinue:
	default:
		return ""
	}
	switch p := params.(type) {
	case *protocol.AppendParams:
		return p.SessionID
	case *protocol.FinalizeParams:
		return p.SessionID
	case *protocol.SessionIDParams:
		return p.SessionID
	case *protocol.ContinueParams:
		return p.SessionID
	}
	return ""
}

// ownedSessions names the sessions a successful request makes this
// connection the driver of.
func ownedSessions(result any) []string {
	switch r := result.(type) {
	case protocol.BeginResult:
		return []string{r.SessionID}
	case protocol.AppendResult:
		return []string{r.SessionID}
	case protocol.ResumeResult:
		return []string{r.SessionID}
	case protocol.TxBeginResult:
		ids := make([]string, len(r.Sessions))
		for i, s := range r.Sessions {
			ids[i] = s.SessionID
		}
		return ids
	}
	return nil
}

// dispatch calls the engine for method with params from decodeParams.
func (h *handler) dispatch(conn *jsonrpc2.Conn, method string, params any) (any, error) {
	switch method {
	case protocol.MethodSessionBegin:
		return h.mgr.BeginAs(h.clientOf(conn), *params.(*protocol.BeginParams))
	case protocol.MethodSessionAppend:
		return h.mgr.Append(*params.(*protocol.AppendParams))
	case protocol.MethodSessionFinalize:
		return h.mgr.Finalize(*params.(*protocol.FinalizeParams))
	case protocol.MethodSessionAbort:
		p := params.(*protocol.SessionIDParams)
		return h.mgr.Abort(p.SessionID)
	case protocol.MethodSessionGet:
		p := params.(*protocol.SessionIDParams)
		return h.mgr.Get(p.SessionID)
	case protocol.MethodSessionList:
		p := params.(*protocol.ListParams)
		return h.mgr.ListPage(*p)
	case protocol.MethodSessionResume:
		p := params.(*protocol.SessionIDParams)
		return h.mgr.Resume(p.SessionID)
	case protocol.MethodSessionContinue:
		p := params.(*protocol.ContinueParams)
		return h.mgr.ContinueAs(h.clientOf(conn), p.SessionID)
	case protocol.MethodSessionUndo:
		p := params.(*protocol.SessionIDParams)
		return h.mgr.Undo(p.SessionID)
	case protocol.MethodSessionClean:
		p := params.(*protocol.CleanParams)
		return h.mgr.Clean(time.Duration(p.OlderThanMS)*time.Millisecond, time.Duration(p.FinishedOlderThanMS)*time.Millisecond), nil
	case protocol.MethodTxBegin:
		return h.mgr.TxBeginAs(h.clientOf(conn), *params.(*protocol.TxBeginParams))
	case protocol.MethodTxCommit:
		return h.mgr.TxCommit(*params.(*protocol.TxCommitParams))
	case protocol.MethodTxAbort:
		p := params.(*protocol.TxIDParams)
		return h.mgr.TxAbort(p.TxID)
	case protocol.MethodTxGet:
		p := params.(*protocol.TxIDParams)
		return h.mgr.TxGet(p.TxID)
	case protocol.MethodTraceList:
		p := params.(*protocol.TraceListParams)
		if h.traces == nil {
			return nil, errTracingOff(method)
		}
		return h.traces.List(*p)
	case protocol.MethodTraceFollow:
		p := params.(*protocol.TraceFollowParams)
		if h.traces == nil {
			return nil, errTracingOff(method)
		}
		// Events go to this connection, from the tracer's goroutine for
		// it, until the connection closes.
		stop := h.traces.Follow(p.TraceFilter, func(n protocol.TraceEventNotification) {
			conn.Notify(context.Background(), protocol.NotifyTraceEvent, n)
		})
		go func() {
			<-conn.DisconnectNotify()
			stop()
		}()
		return protocol.TraceFollowResult{Following: true}, nil
	case protocol.MethodDaemonStatus:
		return h.status(), nil
	case protocol.MethodToolsDefinitions:
		return protocol.ToolsResult{Tools: []protocol.ToolDefinition{protocol.WritePlanToolBegin()}}, nil
	default:
		e := protocol.Errorf(protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod,
			"unknown method %q; daemon.status lists the methods this daemon serves", method)
		e.Data.Method = method
		return nil, e
	}
}

// newParams returns a pointer to the params type of method, or nil for a
// method without params.
func newParams(method string) any {
	switch method {
	case protocol.MethodSessionBegin:
		return new(protocol.BeginParams)
	case protocol.MethodSessionAppend:
		return new(protocol.AppendParams)
	case protocol.MethodSessionFinalize:
		return new(protocol.FinalizeParams)
	case protocol.MethodSessionAbort, protocol.MethodSessionGet, protocol.MethodSessionResume, protocol.MethodSessionUndo:
		return new(protocol.SessionIDParams)
	case protocol.MethodSessionList:
		return new(protocol.ListParams)
	case protocol.MethodSessionContinue:
		return new(protocol.ContinueParams)
	case protocol.MethodSessionClean:
		return new(protocol.CleanParams)
	case protocol.MethodTxBegin:
		return new(protocol.TxBeginParams)
	case protocol.MethodTxCommit:
		return new(protocol.TxCommitParams)
	case protocol.MethodTxAbort, protocol.MethodTxGet:
		return new(protocol.TxIDParams)
	case protocol.MethodTraceList:
		return new(protocol.TraceListParams)
	case protocol.MethodTraceFollow:
		return new(protocol.TraceFollowParams)
	}
	return nil
}

// decodeParams decodes a request's params into the type its method takes;
// a method that takes none gets nil. Absent params decode as an empty
// object, so a missing required field is reported by name rather than as
// "no params".
func (h *handler) decodeParams(req *jsonrpc2.Request) (any, error) {
	if err := protocol.CheckMethod(req.Method); err != nil {
		return nil, err
	}
	raw := []byte("{}")
	if req.Params != nil {
		raw = *req.Params
	}
	if h.params != nil && !req.ID.IsString {
		if p, ok := h.params.take(req.ID.Num); ok {
			raw = p
		}
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	v := newParams(req.Method)
	if v == nil {
		return nil, nil
	}
	var err error
	_, isAppend := v.(*protocol.AppendParams)
	if isAppend {
		v, err = decodeAppend(raw)
	} else {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, pe
		}
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"malformed params for %s: %v", req.Method, err)
		e.Data.Method = req.Method
		var typeErr *json.UnmarshalTypeError
		var semErr *jsonv2.SemanticError
		switch {
		case errors.As(err, &typeErr):
			e.Data.Field = typeErr.Field
		case errors.As(err, &semErr):
			e.Data.Field = strings.TrimPrefix(string(semErr.JSONPointer), "/")
		}
		return nil, e
	}
	// The frame reader hands over the params as the client sent them, so
	// text that is not valid Unicode is seen here; encoding/json replaced
	// it with U+FFFD in v. (decodeAppend checked its params as it read.)
	if !isAppend && !validJSONText(raw) {
		return nil, errInvalidText(req.Method, v)
	}
	if c, ok := v.(paramsChecker); ok {
		if err := c.Check(); err != nil {
			return nil, err
		}
	}
	return v, nil
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

// errTracingOff answers trace methods when oriond runs with --trace=false.
func errTracingOff(method string) error {
	e := protocol.Errorf(protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod,
		"%s: tracing is off in this daemon (oriond run --trace=false)", method)
	e.Data.Method = method
	return e
}

// clientOf names conn's client for the per-client caps.
func (h *handler) clientOf(conn *jsonrpc2.Conn) string {
	if h.client == nil {
		return ""
	}
	return h.client(conn)
}
