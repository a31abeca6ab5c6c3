package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

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

// connSet tracks the connections being served, up to a limit.
type connSet struct {
	mu    sync.Mutex
	limit int
	conns map[*conn]struct{}
}

// conn is one served connection.
type conn struct {
	close func() error
}

func newConnSet(limit int) *connSet {
	return &connSet{limit: limit, conns: make(map[*conn]struct{})}
}

// add admits c unless the limit is reached.
func (s *connSet) add(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) >= s.limit {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connSet) remove(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *connSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// closeAll closes every connection, for shutdown.
func (s *connSet) closeAll() {
	s.mu.Lock()
	all := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.close()
	}
}

// refuse tells a client over the limit why, in a frame its JSON-RPC library
// can read, and closes the connection. The write deadline keeps a peer that
// does not read from holding up the accept loop.
func refuse(c net.Conn, limit int, log *slog.Logger) {
	defer c.Close()
	e := protocol.Errorf(protocol.CodeTooManyConnections, protocol.ReasonTooManyConnections,
		"oriond serves %d connections already (--max-connections); close idle clients or retry later", limit)
	e.Data.Limit = int64(limit)
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
