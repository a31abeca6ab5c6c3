package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/protocol"
)

// Connection limits.
const (
	// DefaultMaxConnections is the connection limit when none is set and
	// the descriptor limit allows it.
	DefaultMaxConnections = 1024
	// fdReserve are descriptors kept for everything but connections: the
	// store, the watcher, the spool, log files and the files finalizes
	// open.
	fdReserve = 64
	// minConnections is the least the derived limit goes to, so a daemon
	// under a tiny RLIMIT_NOFILE still serves someone.
	minConnections = 8
)

// fdLimit returns the soft RLIMIT_NOFILE, or 0 when it cannot be read.
// There is no need to raise it: since Go 1.19 the runtime (package syscall's
// init) sets the soft limit to the hard one (minus one) before main runs.
func fdLimit() uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}

// connectionLimit is the limit for a configured value (0: derived): the
// default, lowered so connections take at most half of the descriptors
// left after fdReserve. A configured value is kept, with a warning where
// it exceeds that share: connections past the descriptor limit then wait
// in the socket's backlog instead of being refused.
func connectionLimit(configured int, nofile uint64, log *slog.Logger) int {
	share := minConnections
	if nofile > fdReserve {
		share = max(int(min(nofile-fdReserve, 1<<30)/2), minConnections)
	}
	if configured > 0 {
		if nofile > 0 && configured > share {
			log.Warn("max-connections is over half of the descriptors RLIMIT_NOFILE leaves; raise the limit (ulimit -n) or lower max-connections",
				"max_connections", configured, "rlimit_nofile", nofile)
		}
		return configured
	}
	if nofile == 0 {
		return DefaultMaxConnections
	}
	return min(DefaultMaxConnections, share)
}

// Fair sharing of the connection limit.
const (
	// DefaultClientShareDivisor sets a client's default share of the
	// limit: a quarter, so one process (a client with a bug, or a loop
	// that never closes what it dials) holds at most 256 of the default
	// 1,024 and three others of its size still fit. A client needs one
	// connection per agent it drives at once; the proxy and the
	// controllers use one per request.
	DefaultClientShareDivisor = 4
	// StatusReserve are connections admitted past the limit that may only
	// ask daemon.status (and tools.definitions): `orionctl status` answers
	// even while the limit is held, and says so.
	StatusReserve = 8
	// reserveIdle is how long a reserved connection may stay without a
	// request: long enough for a status call, short enough that the
	// reserve is free again at once.
	reserveIdle = 5 * time.Second
	// DefaultConnIdleTimeout closes a connection that has sent and been
	// sent nothing for this long while it drives no unfinished session,
	// waits for no reply and follows no trace. Clients dial per use (the
	// CLI per command, the proxy per request) and the Go and Node clients
	// reconnect, so only a forgotten connection notices.
	DefaultConnIdleTimeout = 10 * time.Minute
	// DefaultHeaderTimeout is how long a frame's header may take from its
	// first byte to its blank line: the clients write a header in one
	// write, so a header that takes longer is a peer holding the
	// connection, not a slow one.
	DefaultHeaderTimeout = 10 * time.Second
)

// clientShare is the per-client limit for a configured value (0: a
// quarter of the connection limit, at least one). A process's status
// reserve connections count against its share too, so a share above the
// limit only lets that process into the reserve.
func clientShare(configured, limit int) int {
	if configured > 0 {
		return configured
	}
	return max(limit/DefaultClientShareDivisor, 1)
}

// connSet tracks the connections being served, up to a limit, with each
// peer process's share counted.
type connSet struct {
	mu        sync.Mutex
	limit     int
	perClient int
	reserve   int
	conns     map[*conn]struct{}
	// served counts the connections that are not reserved; byPID those of
	// each peer process (reserved ones included).
	served   int
	reserved int
	byPID    map[int]int
}

// conn is one served connection.
type conn struct {
	// uid and pid are the peer's user and process, by its credentials at
	// connect time.
	uid, pid int
	// name is the peer process's name, read at accept ("" when unknown),
	// which the sessions it begins record.
	name string
	// reserved is a connection admitted past the limit for daemon.status
	// only.
	reserved bool
	// rpc is set once the connection is bound (bind), by serve or by its
	// first request, whichever comes first.
	rpc    atomic.Pointer[jsonrpc2.Conn]
	stream *jsonrpc.ServerStream
	// lastSession is the session id the connection's last append named,
	// which the next one shares (requestRoom); read loop only.
	lastSession string
	// spare is the memory of the last request served on the read loop,
	// for the next request; read loop only.
	spare *served
	// active is the last time (UnixNano) a frame started to arrive: a
	// request. A reply or notification is no activity of the client's;
	// replies pending are seen by its stream (Waiting).
	active atomic.Int64
	// following is set once the connection asked for trace.follow: it
	// waits for events, which is not idleness.
	following atomic.Bool

	// cancels are the requests being served that their client may cancel
	// (protocol.CancelRequest), by their number on the stream (jsonrpc.Request.ID).
	cmu     sync.Mutex
	cancels map[uint64]context.CancelFunc
}

// cancellable returns the context of the request numbered id, a
// child of ctx (the connection's) that its client may cancel, and the
// function to call once the request is done.
func (c *conn) cancellable(ctx context.Context, id uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c.cmu.Lock()
	if c.cancels == nil {
		c.cancels = make(map[uint64]context.CancelFunc)
	}
	c.cancels[id] = cancel
	c.cmu.Unlock()
	return ctx, func() {
		c.cmu.Lock()
		delete(c.cancels, id)
		c.cmu.Unlock()
		cancel()
	}
}

// cancel cancels the request numbered id, if it is cancellable
// and not done.
func (c *conn) cancel(id uint64) {
	c.cmu.Lock()
	cancel := c.cancels[id]
	c.cmu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *conn) touch(now time.Time) { c.active.Store(now.UnixNano()) }

// peer is who is at the other end of c.
func (c *conn) peer() Peer { return Peer{UID: c.uid, PID: c.pid, Name: c.name, conn: c} }

// notify sends the peer a notification. It fails once the connection is
// closed.
func (c *conn) notify(method string, params any) error {
	rpc := c.rpc.Load()
	if rpc == nil {
		return jsonrpc2.ErrClosed
	}
	return rpc.Notify(context.Background(), method, params)
}

// bind records rpc as c's connection. serve and the first request both
// bind, in either order, so that neither a handler nor the idle sweep
// finds c without it.
func (c *conn) bind(rpc *jsonrpc2.Conn) { c.rpc.CompareAndSwap(nil, rpc) }

// shut closes the connection, once it is bound.
func (c *conn) shut() {
	if rpc := c.rpc.Load(); rpc != nil {
		rpc.Close()
	}
}

// admission is what connSet.add decided.
type admission int

const (
	admitted admission = iota
	admittedReserved
	refusedFull
	refusedShare
)

func newConnSet(limit, perClient, reserve int) *connSet {
	return &connSet{limit: limit, perClient: perClient, reserve: reserve,
		conns: make(map[*conn]struct{}), byPID: make(map[int]int)}
}

// add admits c, within the limit and c's process's share of it, or past
// the limit into the status reserve.
func (s *connSet) add(c *conn) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPID[c.pid] >= s.perClient {
		return refusedShare
	}
	switch {
	case s.served < s.limit:
		s.served++
	case s.reserved < s.reserve:
		s.reserved++
		c.reserved = true
	default:
		return refusedFull
	}
	s.byPID[c.pid]++
	s.conns[c] = struct{}{}
	if c.reserved {
		return admittedReserved
	}
	return admitted
}

func (s *connSet) remove(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if c.reserved {
		s.reserved--
	} else {
		s.served--
	}
	if s.byPID[c.pid]--; s.byPID[c.pid] <= 0 {
		delete(s.byPID, c.pid)
	}
}

// count is the connections served, the status reserve included.
func (s *connSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// all returns every connection.
func (s *connSet) all() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		all = append(all, c)
	}
	return all
}

// closeAll closes every connection, for shutdown.
func (s *connSet) closeAll() {
	for _, c := range s.all() {
		c.shut()
	}
}

// idle reports whether a connection may be closed for idleness at now:
// no request for its timeout, no request awaiting its reply,
// no trace followed and (asked last, it costs most) no unfinished session
// driven. A connection of the status reserve is idle after reserveIdle.
func (c *conn) idle(now time.Time, timeout time.Duration, drives func(*conn) bool) bool {
	if c.reserved {
		timeout = reserveIdle
	}
	if timeout <= 0 || now.Sub(time.Unix(0, c.active.Load())) < timeout {
		return false
	}
	if c.stream != nil && c.stream.Waiting() {
		return false
	}
	if c.reserved {
		return true
	}
	return !c.following.Load() && (drives == nil || !drives(c))
}

// sweepIdle closes idle connections until ctx is done.
func (s *connSet) sweepIdle(ctx context.Context, timeout time.Duration, drives func(*conn) bool, log *slog.Logger) {
	interval := time.Second
	if timeout > 0 && timeout/4 < interval {
		interval = max(timeout/4, 10*time.Millisecond)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var closed logEvery
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, c := range s.all() {
				if c.rpc.Load() == nil || !c.idle(now, timeout, drives) {
					continue
				}
				if n, ok := closed.note(now); ok {
					log.Info("closing idle connections", "pid", c.pid, "status_reserve", c.reserved,
						"idle_timeout", timeout, "closed", n)
				}
				c.shut()
			}
		}
	}
}

// connHandler is the handler of one connection: it keeps what the idle
// check and the status reserve need to know, then hands the request on.
type connHandler struct {
	h *handler
	c *conn
}

// reserveMethods are what a connection of the status reserve may ask.
var reserveMethods = map[string]bool{protocol.MethodDaemonStatus: true, protocol.MethodToolsDefinitions: true}

func (ch connHandler) Handle(ctx context.Context, rpc *jsonrpc2.Conn, req *jsonrpc2.Request) {
	// The connection's read loop may hand over its first request before
	// serve had the *jsonrpc2.Conn to bind: a session begun then must
	// still be driven by this connection.
	ch.c.bind(rpc)
	in, ok := ch.c.take(req)
	if !ok {
		// A notification: never answered, as JSON-RPC requires. The
		// stream acts on $/cancelRequest itself (OnCancel).
		return
	}
	if ch.c.reserved && !reserveMethods[in.method] {
		// Refused unread: the buffer of its params goes back.
		in.params.Release()
		method := shortMethod(in.method)
		e := protocol.Errorf(protocol.CodeTooManyConnections, protocol.ReasonTooManyConnections,
			"oriond serves its --max-connections clients already; this connection was let in past the limit for daemon.status only, so %s is refused: close idle clients or retry later",
			method)
		e.Data.Method = method
		rpc.ReplyWithError(ctx, in.id, toRPCError(e))
		rpc.Close()
		return
	}
	if in.method == protocol.MethodTraceFollow {
		ch.c.following.Store(true)
	}
	ch.h.handle(ctx, ch.c, rpc, in)
}

// take returns the request jsonrpc2 hands the handler as req: the one the
// connection's stream read, of which jsonrpc2 was handed a placeholder
// (jsonrpc.ServerStream.Take); false for a notification.
func (c *conn) take(req *jsonrpc2.Request) (incoming, bool) {
	if c.stream == nil {
		return incomingOf(req)
	}
	r, ok := c.stream.Take()
	if !ok {
		return incoming{}, false
	}
	return incoming{id: r.RPCID(), method: r.Method, params: r.Params}, true
}

// refuse tells a client over the limit or its share why, in a frame its
// JSON-RPC library can read, and closes the connection. The write deadline
// keeps a peer that does not read from holding up the accept loop.
func refuse(c net.Conn, why admission, pid int, s *connSet, log *slog.Logger) {
	defer c.Close()
	var e *protocol.Error
	if why == refusedShare {
		e = protocol.Errorf(protocol.CodeTooManyConnections, protocol.ReasonTooManyConnections,
			"this process (pid %d) holds %d connections to oriond already, its share of the limit (--max-client-connections); close the ones it does not use",
			pid, s.perClient)
		e.Data.Limit = int64(s.perClient)
	} else {
		e = protocol.Errorf(protocol.CodeTooManyConnections, protocol.ReasonTooManyConnections,
			"oriond serves %d connections already (--max-connections) and its status reserve is in use; close idle clients or retry later", s.limit)
		e.Data.Limit = int64(s.limit)
	}
	data, err := jsonrpc.EncodeErrorReply(nil, e)
	if err != nil {
		return
	}
	c.SetWriteDeadline(time.Now().Add(time.Second))
	if err := jsonrpc.WriteFrame(c, data); err != nil {
		log.Debug("refusing a connection", "err", err)
	}
}

// logEvery lets a repeated event through to the log at most once per
// interval, counting the ones in between: a flood of connections must not
// become a flood of log lines.
type logEvery struct {
	last  time.Time
	count int
}

// logInterval is how often a repeated event is logged.
const logInterval = 10 * time.Second

// note counts one event at now and reports whether to log it, with the
// events since the last line logged (this one included).
func (l *logEvery) note(now time.Time) (int, bool) {
	l.count++
	if !l.last.IsZero() && now.Sub(l.last) < logInterval {
		return 0, false
	}
	n := l.count
	l.last, l.count = now, 0
	return n, true
}

// acceptBackoff is how long the accept loop waits after a failure that
// passes by itself (out of descriptors or memory), as net/http's Server
// does: from 5 ms doubling to 1 s.
type acceptBackoff struct {
	delay time.Duration
}

func (b *acceptBackoff) next() time.Duration {
	if b.delay == 0 {
		b.delay = 5 * time.Millisecond
	} else {
		b.delay = min(2*b.delay, time.Second)
	}
	return b.delay
}

func (b *acceptBackoff) reset() { b.delay = 0 }

// transientAccept reports whether an accept error passes by itself: the
// process or system is out of descriptors or buffers, or the peer gave up
// before we took its connection. Stopping the daemon over these would hand
// any local process a way to stop it.
func transientAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, errno := range []syscall.Errno{unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM,
		unix.ECONNABORTED, unix.EINTR, unix.EAGAIN, unix.EPROTO, unix.EPERM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
