package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

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
	// traces answers trace.list and trace.follow; nil when tracing is off.
	traces *trace.Tracer
	// inflight lets shutdown wait for requests already being handled, so
	// an append that started is acknowledged or fails before the store closes.
	inflight *sync.WaitGroup
}

// Handle is called from the connection's read loop: it only fixes the
// request's place in its session's queue and hands it to a goroutine.
func (h *handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		// No client notifications are defined yet; $/cancelRequest and
		// friends are ignored rather than answered, as JSON-RPC requires.
		return
	}
	var wait <-chan struct{}
	done := func() {}
	key := sessionKey(req)
	if key != "" {
		wait, done = h.order.enqueue(key)
	}
	h.inflight.Add(1)
	go func() {
		defer h.inflight.Done()
		defer done()
		if wait != nil {
			<-wait
		}
		start := time.Now()
		result, err := h.dispatch(conn, req)
		if err == nil {
			for _, id := range ownedSessions(result) {
				h.owners.claim(id, conn)
			}
		}
		h.traceRequest(req, key, result, err, start)
		if err != nil {
			rpcErr := toRPCError(err)
			h.log.Debug("request failed", "method", req.Method, "code", rpcErr.Code, "err", rpcErr.Message)
			if rerr := conn.ReplyWithError(ctx, req.ID, rpcErr); rerr != nil && !errors.Is(rerr, jsonrpc2.ErrClosed) {
				h.log.Warn("replying", "method", req.Method, "err", rerr)
			}
			return
		}
		h.log.Debug("request", "method", req.Method, "duration", time.Since(start))
		if rerr := conn.Reply(ctx, req.ID, result); rerr != nil && !errors.Is(rerr, jsonrpc2.ErrClosed) {
			h.log.Warn("replying", "method", req.Method, "err", rerr)
		}
	}()
}

// traceRequest records one handled request: which, for which session, how
// long, and how it failed.
func (h *handler) traceRequest(req *jsonrpc2.Request, key string, result any, err error, start time.Time) {
	if ids := ownedSessions(result); key == "" && len(ids) == 1 {
		key = ids[0]
	}
	fields := map[string]any{"duration_ms": float64(time.Since(start).Microseconds()) / 1000}
	if ack, ok := result.(protocol.AppendResult); ok && err == nil {
		fields["seq"] = ack.Seq
		fields["bytes"] = ack.Bytes
		fields["end_marker_seen"] = ack.EndMarkerSeen
	}
	if err != nil {
		rpcErr := toRPCError(err)
		fields["error_code"] = rpcErr.Code
		fields["error"] = rpcErr.Message
		var pe *protocol.Error
		if errors.As(err, &pe) {
			fields["reason"] = pe.Data.Reason
		}
	}
	h.trace.Record(trace.Event{Time: start, Type: "request", SessionID: key, Method: req.Method, Fields: fields})
}

// sessionKey peeks at the session a request is about, for ordering.
func sessionKey(req *jsonrpc2.Request) string {
	switch req.Method {
	case protocol.MethodSessionAppend, protocol.MethodSessionFinalize, protocol.MethodSessionAbort,
		protocol.MethodSessionResume, protocol.MethodSessionContinue:
	default:
		return ""
	}
	if req.Params == nil {
		return ""
	}
	var p protocol.SessionIDParams
	if json.Unmarshal(*req.Params, &p) != nil {
		return ""
	}
	return p.SessionID
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

func (h *handler) dispatch(conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case protocol.MethodSessionBegin:
		var p protocol.BeginParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Begin(p)
	case protocol.MethodSessionAppend:
		var p protocol.AppendParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Append(p)
	case protocol.MethodSessionFinalize:
		var p protocol.FinalizeParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Finalize(p)
	case protocol.MethodSessionAbort:
		var p protocol.SessionIDParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Abort(p.SessionID)
	case protocol.MethodSessionGet:
		var p protocol.SessionIDParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Get(p.SessionID)
	case protocol.MethodSessionList:
		var p protocol.ListParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return protocol.ListResult{Sessions: h.mgr.List(p.All)}, nil
	case protocol.MethodSessionResume:
		var p protocol.SessionIDParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Resume(p.SessionID)
	case protocol.MethodSessionContinue:
		var p protocol.ContinueParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Continue(p.SessionID)
	case protocol.MethodSessionUndo:
		var p protocol.SessionIDParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Undo(p.SessionID)
	case protocol.MethodSessionClean:
		var p protocol.CleanParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.Clean(time.Duration(p.OlderThanMS)*time.Millisecond, time.Duration(p.FinishedOlderThanMS)*time.Millisecond), nil
	case protocol.MethodTxBegin:
		var p protocol.TxBeginParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.TxBegin(p)
	case protocol.MethodTxCommit:
		var p protocol.TxCommitParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.TxCommit(p)
	case protocol.MethodTxAbort:
		var p protocol.TxIDParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.TxAbort(p.TxID)
	case protocol.MethodTxGet:
		var p protocol.TxIDParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return h.mgr.TxGet(p.TxID)
	case protocol.MethodTraceList:
		var p protocol.TraceListParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		if h.traces == nil {
			return nil, errTracingOff(req.Method)
		}
		return h.traces.List(p)
	case protocol.MethodTraceFollow:
		var p protocol.TraceFollowParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		if h.traces == nil {
			return nil, errTracingOff(req.Method)
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
			"unknown method %q; daemon.status lists the methods this daemon serves", req.Method)
		e.Data.Method = req.Method
		return nil, e
	}
}

// decode unmarshals params into v. Absent params decode as an empty object,
// so a missing required field is reported by name rather than as "no params".
func decode(req *jsonrpc2.Request, v any) error {
	if req.Params == nil || string(*req.Params) == "null" {
		return nil
	}
	if err := json.Unmarshal(*req.Params, v); err != nil {
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"malformed params for %s: %v", req.Method, err)
		e.Data.Method = req.Method
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			e.Data.Field = typeErr.Field
		}
		return e
	}
	return nil
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
