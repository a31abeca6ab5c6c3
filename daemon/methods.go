package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/protocol"
)

// methods is the daemon's method table: every method it serves, each once,
// with its handler, the session it is about (its requests are then served
// in the order they were read) and the sessions a success makes the
// connection the driver of. Its names and types are protocol.MethodSpecs'
// (TestMethodTableIsTheProtocol).
//
// Adding a method: its protocol.Method (protocol/methods.go) and types, a
// route here, and its handler below.
var methods = table(
	route(protocol.SessionBegin, (*handler).begin).owns(beginOwner),
	route(protocol.SessionAppend, (*handler).append).
		about(func(p *protocol.AppendParams) string { return p.SessionID }).
		ownsOne(func(r protocol.AppendResult) string { return r.SessionID }).
		decodeWith(appendParams).
		takesRaw(appendRawParams).
		keepsIn(func(r protocol.AppendResult, room *requestRoom) any {
			room.appendResult = r
			return &room.appendResult
		}).
		direct(),
	route(protocol.SessionFinalize, (*handler).finalize).
		about(func(p *protocol.FinalizeParams) string { return p.SessionID }),
	route(protocol.SessionAbort, (*handler).abort).about(sessionIDParams),
	route(protocol.SessionGet, (*handler).get),
	route(protocol.SessionList, (*handler).list).heavy(),
	route(protocol.SessionResume, (*handler).resume).about(sessionIDParams).
		owns(func(r protocol.ResumeResult) []string { return []string{r.SessionID} }),
	route(protocol.SessionContinue, (*handler).continue_).
		about(func(p *protocol.ContinueParams) string { return p.SessionID }).
		owns(beginOwner),
	route(protocol.SessionClean, (*handler).clean),
	route(protocol.SessionUndo, (*handler).undo),
	route(protocol.SessionContent, (*handler).content).heavy(),
	route(protocol.SessionWrite, (*handler).write).
		decodeWith(fastParams[protocol.WriteParams](protocol.MethodSessionWrite)).
		takesRaw(writeRawParams).
		owns(func(r protocol.FinalizeResult) []string { return []string{r.SessionID} }),
	route(protocol.TxBegin, (*handler).txBegin).owns(txOwner),
	route(protocol.TxCommit, (*handler).txCommit),
	route(protocol.TxAbort, (*handler).txAbort),
	route(protocol.TxGet, (*handler).txGet),
	route(protocol.DaemonStatus, (*handler).daemonStatus),
	route(protocol.DaemonAllowRoot, (*handler).allowRoot),
	route(protocol.ToolsDefinitions, (*handler).toolsDefinitions),
	route(protocol.TraceList, (*handler).traceList).heavy(),
	route(protocol.TraceFollow, (*handler).traceFollow),
	route(protocol.TurnBegin, (*handler).turnBegin),
	route(protocol.TurnEnd, (*handler).turnEnd),
	route(protocol.TurnList, (*handler).turnList).heavy(),
	route(protocol.TurnGet, (*handler).turnGet).heavy(),
	route(protocol.TurnUndo, (*handler).turnUndo),
	route(protocol.TurnRedo, (*handler).turnRedo),
	route(protocol.CheckpointCreate, (*handler).checkpointCreate),
)

func sessionIDParams(p *protocol.SessionIDParams) string { return p.SessionID }

func beginOwner(r protocol.BeginResult) []string { return []string{r.SessionID} }

func txOwner(r protocol.TxBeginResult) []string {
	ids := make([]string, len(r.Sessions))
	for i, s := range r.Sessions {
		ids[i] = s.SessionID
	}
	return ids
}

func (h *handler) begin(_ context.Context, peer Peer, p *protocol.BeginParams) (protocol.BeginResult, error) {
	p.Client = withAgent(peer.Name, p.Agent)
	return h.mgr.BeginAs(peer.Client(), *p)
}

func (h *handler) append(ctx context.Context, _ Peer, p *protocol.AppendParams) (protocol.AppendResult, error) {
	return h.mgr.AppendOrdered(*p, orderer(ctx))
}

func (h *handler) finalize(ctx context.Context, _ Peer, p *protocol.FinalizeParams) (protocol.FinalizeResult, error) {
	return h.mgr.FinalizeContext(ctx, *p)
}

func (h *handler) abort(_ context.Context, _ Peer, p *protocol.SessionIDParams) (protocol.AbortResult, error) {
	return h.mgr.Abort(p.SessionID)
}

func (h *handler) get(_ context.Context, _ Peer, p *protocol.SessionIDParams) (protocol.SessionInfo, error) {
	return h.mgr.Get(p.SessionID)
}

func (h *handler) list(ctx context.Context, _ Peer, p *protocol.ListParams) (protocol.ListResult, error) {
	return h.mgr.ListPage(ctx, *p)
}

func (h *handler) resume(_ context.Context, _ Peer, p *protocol.SessionIDParams) (protocol.ResumeResult, error) {
	return h.mgr.Resume(p.SessionID)
}

func (h *handler) continue_(_ context.Context, peer Peer, p *protocol.ContinueParams) (protocol.BeginResult, error) {
	return h.mgr.ContinueAs(peer.Client(), p.SessionID)
}

func (h *handler) clean(_ context.Context, _ Peer, p *protocol.CleanParams) (protocol.CleanResult, error) {
	return h.mgr.Clean(time.Duration(p.OlderThanMS)*time.Millisecond, time.Duration(p.FinishedOlderThanMS)*time.Millisecond), nil
}

func (h *handler) undo(_ context.Context, _ Peer, p *protocol.SessionIDParams) (protocol.UndoResult, error) {
	return h.mgr.Undo(p.SessionID)
}

func (h *handler) content(ctx context.Context, _ Peer, p *protocol.ContentParams) (protocol.ContentResult, error) {
	return h.mgr.Content(ctx, *p)
}

func (h *handler) write(_ context.Context, peer Peer, p *protocol.WriteParams) (protocol.FinalizeResult, error) {
	p.Client = peer.Name
	return h.mgr.WriteAs(peer.Client(), *p)
}

func (h *handler) txBegin(_ context.Context, peer Peer, p *protocol.TxBeginParams) (protocol.TxBeginResult, error) {
	for i := range p.Files {
		p.Files[i].Client = peer.Name
	}
	return h.mgr.TxBeginAs(peer.Client(), *p)
}

func (h *handler) txCommit(_ context.Context, _ Peer, p *protocol.TxCommitParams) (protocol.TxCommitResult, error) {
	return h.mgr.TxCommit(*p)
}

func (h *handler) txAbort(_ context.Context, _ Peer, p *protocol.TxIDParams) (protocol.TxInfo, error) {
	return h.mgr.TxAbort(p.TxID)
}

func (h *handler) txGet(_ context.Context, _ Peer, p *protocol.TxIDParams) (protocol.TxInfo, error) {
	return h.mgr.TxGet(p.TxID)
}

func (h *handler) allowRoot(_ context.Context, _ Peer, p *protocol.AllowRootParams) (protocol.AllowRootResult, error) {
	return h.roots.allow(p.Path)
}

func (h *handler) daemonStatus(context.Context, Peer, *protocol.NoParams) (protocol.StatusResult, error) {
	return h.status(), nil
}

func (h *handler) toolsDefinitions(context.Context, Peer, *protocol.NoParams) (protocol.ToolsResult, error) {
	return protocol.ToolsResult{Tools: []protocol.ToolDefinition{protocol.WritePlanToolBegin()}}, nil
}

func (h *handler) traceList(ctx context.Context, _ Peer, p *protocol.TraceListParams) (protocol.TraceListResult, error) {
	if h.traces == nil {
		return protocol.TraceListResult{}, errTracingOff(protocol.MethodTraceList)
	}
	return h.traces.List(ctx, *p)
}

func (h *handler) traceFollow(ctx context.Context, peer Peer, p *protocol.TraceFollowParams) (protocol.TraceFollowResult, error) {
	if h.traces == nil {
		return protocol.TraceFollowResult{}, errTracingOff(protocol.MethodTraceFollow)
	}
	c := peer.conn
	if c == nil {
		return protocol.TraceFollowResult{}, errors.New("trace.follow needs a connection to send its events on")
	}
	if err := h.follows.add(c); err != nil {
		return protocol.TraceFollowResult{}, err
	}
	// Events go to this connection, from the tracer's goroutine for it,
	// until the connection closes, which is when ctx is done.
	stop := h.traces.Follow(p.TraceFilter, func(n protocol.TraceEventNotification) {
		c.notify(protocol.NotifyTraceEvent, n)
	})
	go func() {
		<-ctx.Done()
		stop()
		h.follows.done(c)
	}()
	return protocol.TraceFollowResult{Following: true}, nil
}

// method is one entry of the table with its types erased: what Handle
// needs to decode, order, serve and account for a request.
type method struct {
	name           string
	params, result reflect.Type
	// decode turns the params as sent into a *P, checked against their
	// limits; long is what the frame reader's pass learned of their
	// longest string; room is the request's, which the decoder may
	// decode into (decodeWith).
	decode func(raw json.RawMessage, long jsonrpc.LongString, room *requestRoom) (any, error)
	// decodeRaw is decode for a frame that carried content raw
	// (protocol.HeaderRawLength); nil for a method that takes none.
	decodeRaw func(raw json.RawMessage, content []byte, room *requestRoom) (any, error)
	// session names the session the decoded params are about, "" for
	// none.
	session func(params any) string
	// serve calls the handler with decoded params and names the sessions
	// its result makes the connection the driver of. The result may be
	// kept in room (keepsIn).
	serve func(h *handler, ctx context.Context, peer Peer, params any, room *requestRoom) (result any, owned ownedIDs, err error)
	// heavy: its reply may be megabytes, built and written under the
	// handler's heavyGate.
	heavy bool
	// direct: quick enough to be served on its connection's read loop
	// when nothing else of the connection waits (handler.direct).
	direct bool
}

// routeOf is a method of the table with its types, as written in it.
type routeOf[P, R any] struct {
	m          protocol.Method[P, R]
	handle     func(*handler, context.Context, Peer, *P) (R, error)
	sessionOf  func(*P) string
	ownedBy    func(R) []string
	ownedOne   func(R) string
	decoder    func(json.RawMessage, jsonrpc.LongString, *requestRoom) (*P, error)
	rawDecoder func(json.RawMessage, []byte, *requestRoom) (*P, error)
	keep       func(R, *requestRoom) any
	isHeavy    bool
	isDirect   bool
}

// route serves m with handle, whose params and result are m's types.
func route[P, R any](m protocol.Method[P, R], handle func(*handler, context.Context, Peer, *P) (R, error)) routeOf[P, R] {
	return routeOf[P, R]{m: m, handle: handle}
}

// about says which session a request is about: the requests of one session
// are served one at a time, in the order they were read (an append waits
// for the one before it), and its trace events name it.
func (r routeOf[P, R]) about(session func(*P) string) routeOf[P, R] {
	r.sessionOf = session
	return r
}

// owns says which sessions a successful request makes its connection the
// driver of (it is sent their notifications, and they are left to recover
// when it drops).
func (r routeOf[P, R]) owns(owned func(R) []string) routeOf[P, R] {
	r.ownedBy = owned
	return r
}

// ownsOne is owns for a method whose success makes its connection the
// driver of one session: no slice is made for it on each request (an
// append's).
func (r routeOf[P, R]) ownsOne(owned func(R) string) routeOf[P, R] {
	r.ownedOne = owned
	return r
}

// ownedIDs are the sessions a request made its connection the driver of:
// one, or several.
type ownedIDs struct {
	one  string
	many []string
}

// each calls f with each session of o.
func (o ownedIDs) each(f func(id string)) {
	if o.one != "" {
		f(o.one)
	}
	for _, id := range o.many {
		f(id)
	}
}

// single returns the session of o when it holds exactly one.
func (o ownedIDs) single() (string, bool) {
	switch {
	case o.one != "" && len(o.many) == 0:
		return o.one, true
	case o.one == "" && len(o.many) == 1:
		return o.many[0], true
	}
	return "", false
}

// heavy says a reply may be megabytes: it is built and written under the
// handler's heavyGate, one per connection and a few daemon-wide.
func (r routeOf[P, R]) heavy() routeOf[P, R] {
	r.isHeavy = true
	return r
}

// direct says a request is quick: served on its connection's read loop when
// nothing else of the connection waits, it saves a goroutine and the wakeups
// of handing it one, and delays nothing. Only for a method whose longest
// wait is a journal sync: the connection reads nothing else meanwhile. Its
// handler must keep nothing of its request (its context, its params, its
// Orderer) past its return: the request's memory then serves the next.
func (r routeOf[P, R]) direct() routeOf[P, R] {
	r.isDirect = true
	return r
}

// decodeWith replaces the standard decoding of the params (encoding/json,
// then a check of their text and of their limits) by decode, which must do
// all of that itself. What it decodes may share raw's bytes only until the
// handler returns: the frame's buffer is then read into again. It may
// decode into the request's room, which lives as long as the request.
func (r routeOf[P, R]) decodeWith(decode func(json.RawMessage, jsonrpc.LongString, *requestRoom) (*P, error)) routeOf[P, R] {
	r.decoder = decode
	return r
}

// takesRaw says the method takes its content raw, after the JSON of its
// params (protocol.HeaderRawLength), for the field
// protocol.RawContentFields names, and decodes such params by decode, which
// must do all decodeWith's decoder does, the raw content standing for that
// field. What it decodes may share content's bytes as decodeWith's may
// share raw's.
func (r routeOf[P, R]) takesRaw(decode func(json.RawMessage, []byte, *requestRoom) (*P, error)) routeOf[P, R] {
	r.rawDecoder = decode
	return r
}

// keepsIn keeps the handler's result in the request's room, by keep,
// which returns what the handler's reply and trace are made from (a
// pointer into room): a result held as an interface otherwise costs an
// allocation of its own.
func (r routeOf[P, R]) keepsIn(keep func(R, *requestRoom) any) routeOf[P, R] {
	r.keep = keep
	return r
}

func (r routeOf[P, R]) erase() method {
	spec := r.m.Spec()
	m := method{name: spec.Name, params: spec.Params, result: spec.Result, heavy: r.isHeavy, direct: r.isDirect}
	switch {
	case r.decoder != nil:
		m.decode = func(raw json.RawMessage, long jsonrpc.LongString, room *requestRoom) (any, error) {
			return r.decoder(raw, long, room)
		}
	case spec.Params == reflect.TypeFor[protocol.NoParams]():
		m.decode = func(json.RawMessage, jsonrpc.LongString, *requestRoom) (any, error) {
			return new(protocol.NoParams), nil
		}
	default:
		m.decode = func(raw json.RawMessage, _ jsonrpc.LongString, _ *requestRoom) (any, error) {
			return decodeParams[P](spec.Name, raw)
		}
	}
	if r.rawDecoder != nil {
		m.decodeRaw = func(raw json.RawMessage, content []byte, room *requestRoom) (any, error) {
			return r.rawDecoder(raw, content, room)
		}
	}
	m.session = func(any) string { return "" }
	if r.sessionOf != nil {
		m.session = func(p any) string { return r.sessionOf(p.(*P)) }
	}
	m.serve = func(h *handler, ctx context.Context, peer Peer, p any, room *requestRoom) (any, ownedIDs, error) {
		res, err := r.handle(h, ctx, peer, p.(*P))
		if err != nil {
			return nil, ownedIDs{}, err
		}
		var owned ownedIDs
		if r.ownedOne != nil {
			owned.one = r.ownedOne(res)
		}
		if r.ownedBy != nil {
			owned.many = r.ownedBy(res)
		}
		if r.keep != nil && room != nil {
			return r.keep(res, room), owned, nil
		}
		return res, owned, nil
	}
	return m
}

// erasable is a routeOf of any types.
type erasable interface{ erase() method }

// table indexes routes by method name; a name twice is a bug caught at
// start.
func table(routes ...erasable) map[string]method {
	t := make(map[string]method, len(routes))
	for _, r := range routes {
		m := r.erase()
		if _, dup := t[m.name]; dup {
			panic("daemon: method " + m.name + " is in the method table twice")
		}
		t[m.name] = m
	}
	return t
}

// maxAgentName bounds the agent's name a caller gives for listings.
const maxAgentName = 32

// withAgent is a session's client as listings show it: the peer process's
// name, and the agent a proxy writes for after it. The agent's name is
// the caller's word: only letters, digits and "._-" of it are kept, and
// at most maxAgentName bytes, so it cannot forge a listing's layout.
func withAgent(client, agent string) string {
	var b strings.Builder
	for _, r := range agent {
		if b.Len() >= maxAgentName {
			break
		}
		if r < 128 && (r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	switch {
	case b.Len() == 0:
		return client
	case client == "":
		return "(" + b.String() + ")"
	}
	return client + " (" + b.String() + ")"
}
