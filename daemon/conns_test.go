package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

func TestLogEvery(t *testing.T) {
	var l logEvery
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at   time.Duration
		n    int
		logs bool
	}{
		{0, 1, true},
		{time.Second, 0, false},
		{5 * time.Second, 0, false},
		{logInterval, 3, true},
		{logInterval + time.Millisecond, 0, false},
		{3 * logInterval, 2, true},
	}
	for i, s := range steps {
		n, ok := l.note(t0.Add(s.at))
		if n != s.n || ok != s.logs {
			t.Fatalf("step %d: note = %d, %v; want %d, %v", i, n, ok, s.n, s.logs)
		}
	}
}

func TestConnectionLimit(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name       string
		configured int
		nofile     uint64
		want       int
	}{
		{"Default", 0, 1 << 20, DefaultMaxConnections},
		{"LowFDs", 0, 256, 96},
		{"TinyFDs", 0, 16, minConnections},
		{"Unknown", 0, 0, DefaultMaxConnections},
		{"ConfiguredKept", 5000, 256, 5000},
		{"Configured", 10, 1 << 20, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := connectionLimit(tt.configured, tt.nofile, log); got != tt.want {
				t.Fatalf("connectionLimit(%d, %d) = %d, want %d", tt.configured, tt.nofile, got, tt.want)
			}
		})
	}
}

func TestTransientAccept(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}, true},
		{&net.OpError{Op: "accept", Err: net.ErrClosed}, false},
		{errors.New("something else"), false},
	} {
		if got := transientAccept(tt.err); got != tt.want {
			t.Errorf("transientAccept(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestConnSetShares: a process gets up to its share; past the limit, a
// process under its share gets a place in the status reserve; past both,
// or past its share, it is refused; leaving frees the place.
func TestConnSetShares(t *testing.T) {
	s := newConnSet(4, 2, 1)
	add := func(pid int) (*conn, admission) {
		c := &conn{pid: pid}
		return c, s.add(c)
	}
	steps := []struct {
		pid  int
		want admission
	}{
		{1, admitted}, {1, admitted}, {1, refusedShare},
		{2, admitted}, {3, admitted},
		{4, admittedReserved}, {5, refusedFull}, {3, refusedFull},
	}
	var held []*conn
	for i, st := range steps {
		c, got := add(st.pid)
		if got != st.want {
			t.Fatalf("step %d (pid %d): %v, want %v", i, st.pid, got, st.want)
		}
		if got == admitted || got == admittedReserved {
			held = append(held, c)
		}
	}
	if !held[len(held)-1].reserved || s.count() != 5 {
		t.Fatalf("reserved %v, count %d", held[len(held)-1].reserved, s.count())
	}
	s.remove(held[0])
	if _, got := add(1); got != admitted {
		t.Fatalf("after pid 1 closed one: %v", got)
	}
	if got := clientShare(0, 1024); got != 256 {
		t.Fatalf("default share of 1024: %d", got)
	}
}

// TestConnIdle: only a connection quiet for its timeout, waiting for no
// reply, following no trace and driving no session is idle; one of the
// status reserve is idle after reserveIdle whatever the timeout.
func TestConnIdle(t *testing.T) {
	now := time.Unix(1000, 0)
	quiet := func() *conn {
		c := &conn{}
		c.touch(now.Add(-time.Minute))
		return c
	}
	none := func(*conn) bool { return false }
	if c := quiet(); !c.idle(now, 30*time.Second, none) {
		t.Fatal("a quiet connection is not idle")
	}
	if c := quiet(); c.idle(now, 2*time.Minute, none) {
		t.Fatal("a connection within its timeout is idle")
	}
	if c := quiet(); c.idle(now, -1, none) {
		t.Fatal("a negative timeout closes connections")
	}
	c := quiet()
	c.following.Store(true)
	if c.idle(now, time.Second, none) {
		t.Fatal("a connection following the trace is idle")
	}
	c = quiet()
	if c.idle(now, time.Second, func(*conn) bool { return true }) {
		t.Fatal("a connection driving a session is idle")
	}
	c = quiet()
	c.reserved = true
	if !c.idle(now, time.Hour, none) {
		t.Fatal("a status-reserve connection outlives reserveIdle")
	}
}

type handlerFunc func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { f(ctx, c, r) }

// TestConnHandlerBindsBeforeTheFirstRequest: a connection's read loop can
// hand over its first request before serve binds the connection; the
// request binds it, so what it begins is driven by this connection, and
// its handler sees the peer the connection was accepted from.
func TestConnHandlerBindsBeforeTheFirstRequest(t *testing.T) {
	c := &conn{uid: 1000, pid: 42, name: "agent"}
	a, b := net.Pipe()
	defer b.Close()
	rpc := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(a, jsonrpc2.VSCodeObjectCodec{}),
		handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}))
	defer rpc.Close()
	ch := connHandler{h: &handler{}, c: c}
	ch.Handle(context.Background(), rpc, &jsonrpc2.Request{Method: "session.begin", Notif: true})
	if got := c.rpc.Load(); got != rpc {
		t.Fatalf("the first request left the connection bound to %p, want %p", got, rpc)
	}
	p := c.peer()
	if p.UID != 1000 || p.PID != 42 || p.Name != "agent" || p.Client() != "pid 42" {
		t.Fatalf("peer %+v (client %q), want uid 1000, pid 42, agent, client pid 42", p, p.Client())
	}
}
