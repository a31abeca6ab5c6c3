package proxy

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/orion-agent/orion/internal/tcppeer"
)

// Bounds on the proxy's connections, like the daemon's on its socket.
const (
	// DefaultMaxConnections bounds the connections open at once.
	DefaultMaxConnections = 1024
	// DefaultMaxUserConnections is one local user's share of them, where
	// the system says which user holds a connection (Linux).
	DefaultMaxUserConnections = DefaultMaxConnections / 4
	// HeaderTimeout is how long a connection may take to send a request's
	// headers.
	HeaderTimeout = 10 * time.Second
	// IdleTimeout closes a kept-alive connection with no request. Clients
	// close theirs sooner (their pools keep them seconds), so a request is
	// rarely sent on a connection the proxy is closing.
	IdleTimeout = 2 * time.Minute
)

// ConnLimits bound the connections LimitConns lets through.
type ConnLimits struct {
	// Max is the most connections open at once (0: DefaultMaxConnections).
	Max int
	// PerUser is one local user's share (0: DefaultMaxUserConnections),
	// counted where the user holding a connection is known; elsewhere only
	// Max applies.
	PerUser int
	// Logger is told of refusals, at most once every 10 s.
	Logger *slog.Logger
	// UserOf says which user holds a connection (nil: tcppeer.UID).
	UserOf func(net.Conn) (int, bool)
}

// LimitConns returns ln with its connections bounded: past Max open at
// once, or past PerUser of one user's, a new connection is answered 503
// and closed at once, before anything of it is read, so a program holding
// connections open cannot keep the others out. Another user of the
// machine, without the secret, can hold its share and no more.
func LimitConns(ln net.Listener, lim ConnLimits) net.Listener {
	if lim.Max <= 0 {
		lim.Max = DefaultMaxConnections
	}
	if lim.PerUser <= 0 {
		lim.PerUser = DefaultMaxUserConnections
	}
	lim.PerUser = min(lim.PerUser, lim.Max)
	if lim.Logger == nil {
		lim.Logger = slog.Default()
	}
	if lim.UserOf == nil {
		lim.UserOf = tcppeer.UID
	}
	return &limitListener{Listener: ln, lim: lim, byUser: map[int]int{}}
}

type limitListener struct {
	net.Listener
	lim ConnLimits

	mu      sync.Mutex
	open    int
	byUser  map[int]int
	refused int
	lastLog time.Time
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, known := -1, false
		if l.lim.PerUser < l.lim.Max {
			uid, known = l.lim.UserOf(c)
		}
		l.mu.Lock()
		why := ""
		switch {
		case l.open >= l.lim.Max:
			why = fmt.Sprintf("%d connections are open, the most this proxy serves at once (--max-connections)", l.open)
		case known && l.byUser[uid] >= l.lim.PerUser:
			why = fmt.Sprintf("this user holds %d connections, its share (--max-user-connections)", l.byUser[uid])
		default:
			l.open++
			if known {
				l.byUser[uid]++
			}
		}
		if why != "" {
			l.noteRefusal(why, uid, known)
		}
		l.mu.Unlock()
		if why == "" {
			return &limitedConn{Conn: c, l: l, uid: uid, known: known}, nil
		}
		refuseConn(c, why)
	}
}

// noteRefusal logs refusals, at most once every 10 s with their count:
// a flood must not flood the log too. Called with mu held.
func (l *limitListener) noteRefusal(why string, uid int, known bool) {
	l.refused++
	user := "unknown"
	if known {
		user = fmt.Sprint(uid)
	}
	if time.Since(l.lastLog) < 10*time.Second {
		return
	}
	l.lim.Logger.Warn("connections refused: too many open", "refused", l.refused, "last_reason", why, "uid", user,
		"max_connections", l.lim.Max, "max_user_connections", l.lim.PerUser)
	l.refused, l.lastLog = 0, time.Now()
}

func (l *limitListener) release(uid int, known bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if known {
		if l.byUser[uid]--; l.byUser[uid] <= 0 {
			delete(l.byUser, uid)
		}
	}
}

// refuseConn answers a connection it will not serve with a 503 the SDKs
// read (and may retry later), without waiting on it: a fresh socket's
// buffer takes the few bytes at once.
func refuseConn(c net.Conn, why string) {
	body := fmt.Sprintf(`{"type":"error","error":{"type":"overloaded_error","message":"orionctl proxy: %s; try again shortly"}}`, why)
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = c.Close()
}

// limitedConn gives its place back once, when closed.
type limitedConn struct {
	net.Conn
	l     *limitListener
	uid   int
	known bool
	once  sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.uid, c.known) })
	return err
}
