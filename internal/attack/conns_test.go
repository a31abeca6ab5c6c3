package attack

import (
	"bufio"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// openConns is how many connections each test opens: more than the
// "1,000+" concurrent clients the daemon must survive, fewer than the race detector's 8,128 live goroutines allow in
// the test process.
const openConns = 1100

// statusReserve is the daemon's StatusReserve: connections let in past the
// limit for daemon.status only.
const statusReserve = 8

// dialMany opens n connections to the daemon (all of them: the listen
// backlog takes those the daemon has not accepted yet), closed when the
// test ends.
func dialMany(t *testing.T, d *testdaemon.Daemon, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range n {
		c, err := net.DialTimeout("unix", d.Socket, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	return conns
}

// servedSoon checks that a fresh client is served within 10 s, once the
// daemon has noticed connections closing.
func servedSoon(t *testing.T, d *testdaemon.Daemon) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialRaw(t, d)
		c.send(frameOf(statusRequest))
		r, err := c.readReply()
		if err == nil && r.Error == nil {
			return
		}
		c.c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a fresh client is not served: %v %v\n%s", r, err, tail(d.Logs(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestConnsLimit: past --max-connections, the status reserve lets a few
// connections in for daemon.status alone (anything else is refused with
// too_many_connections and the connection closed); past the reserve a
// client gets a framed too_many_connections error and the connection is
// closed. Those within the limit are served, and a fresh client is served
// once they go. Every connection is this test process's, so its share is
// raised past the limit and its reserve.
func TestConnsLimit(t *testing.T) {
	t.Parallel()
	const limit = 50
	d := testdaemon.Start(t, "--max-connections", "50", "--max-client-connections", "100")
	// testdaemon's readiness probe holds a slot until the daemon notices
	// its close, asynchronously: wait until this connection is the only
	// one, and keep it, so exactly limit-1 of the next ones are served.
	first := dial(t, d)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var st protocol.StatusResult
		first.must(protocol.MethodDaemonStatus, nil, &st)
		if st.Connections == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon.status still counts %d connections", st.Connections)
		}
		time.Sleep(10 * time.Millisecond)
	}
	room := limit - 1
	// Within the limit, then the status reserve: each is served
	// daemon.status.
	conns := dialMany(t, d, room+statusReserve)
	held := make([]*rawConn, len(conns))
	var refused, served, reserved int
	for i, c := range conns {
		held[i] = &rawConn{t: t, c: c, r: bufio.NewReader(c)}
		held[i].send(frameOf(statusRequest))
		if r := held[i].mustReply(); r.Error != nil {
			t.Fatalf("connection %d (served %d, status-only %d): daemon.status answered %v\n%s", i+1, served, reserved, r, tail(d.Logs(), 3000))
		}
		if i < room {
			served++
		}
	}
	// A reserved connection is closed after 5 s without a request, and
	// its place goes to the next one. Dialing and reading a thousand
	// more can take longer than that on a loaded machine, so meanwhile
	// each reserved connection asks daemon.status once a second, as a
	// client holding it would.
	asked := time.Now()
	keepReserve := func() {
		if time.Since(asked) < time.Second {
			return
		}
		for _, rc := range held[room:] {
			rc.send(frameOf(statusRequest))
			if r := rc.mustReply(); r.Error != nil {
				t.Fatalf("a connection of the status reserve: daemon.status answered %v", r)
			}
		}
		asked = time.Now()
	}
	// Past the reserve, all at once: each is refused.
	var rest []net.Conn
	for n := openConns - len(conns); len(rest) < n; keepReserve() {
		rest = append(rest, dialMany(t, d, min(50, n-len(rest)))...)
	}
	for i, c := range rest {
		rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
		r, err := rc.readReply()
		switch {
		case err != nil:
			t.Fatalf("connection %d: no reply: %v", len(conns)+i+1, err)
		case r.Error != nil && r.Error.Code == protocol.CodeTooManyConnections &&
			r.Error.Data.Reason == protocol.ReasonTooManyConnections && string(r.ID) == "null" &&
			r.Error.Data.Limit == limit && strings.Contains(r.Error.Message, "--max-connections"):
			refused++
			rc.expectClosed()
		default:
			t.Fatalf("connection %d: %v", len(conns)+i+1, r)
		}
		keepReserve()
	}
	// The reserve takes daemon.status only.
	for i, rc := range held[room:] {
		rc.send(frameOf(`{"jsonrpc":"2.0","id":7,"method":"session.list"}`))
		r := rc.mustReply()
		if r.Error == nil || r.Error.Data.Reason != protocol.ReasonTooManyConnections || string(r.ID) != "7" {
			t.Fatalf("connection %d of the status reserve: session.list answered %v", room+i+1, r)
		}
		rc.expectClosed()
		reserved++
	}
	t.Logf("%d connections: %d served, %d status-only, %d refused", len(conns)+len(rest), served, reserved, refused)
	if served != room || reserved != statusReserve || refused != openConns-room-statusReserve {
		t.Fatalf("%d served, %d status-only, %d refused; want %d, %d and %d", served, reserved, refused,
			room, statusReserve, openConns-room-statusReserve)
	}
	for _, c := range conns[:room] {
		c.Close()
	}
	servedSoon(t, d)
	var st protocol.StatusResult
	dial(t, d).must(protocol.MethodDaemonStatus, nil, &st)
	if st.MaxConnections != limit || st.Connections < 1 || st.Connections > limit {
		t.Fatalf("daemon.status: max_connections %d, connections %d", st.MaxConnections, st.Connections)
	}
}

// TestConnsFDExhaustion: about 20,000 connections made accept fail with
// EMFILE and oriond exit. Here the daemon runs out of descriptors at ~100
// (its RLIMIT_NOFILE lowered to 128, --max-connections set past it on
// purpose): it must keep running, serve again once connections close,
// and never lose the store.
func TestConnsFDExhaustion(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t, "--max-connections", "5000")
	lowerFDLimit(t, d.PID(), 128)
	conns := dialMany(t, d, openConns)
	// The accept loop runs into EMFILE (else the test proves nothing)
	// and backs off.
	d.WaitLog("too many open files")
	if err := syscall.Kill(d.PID(), 0); err != nil {
		t.Fatalf("oriond died with %d connections open: %v\n%s", len(conns), err, tail(d.Logs(), 2000))
	}
	for _, c := range conns {
		c.Close()
	}
	servedSoon(t, d)
	r := dial(t, d)
	if je := r.write(protocol.BeginParams{TargetFile: d.Root + "/after.txt", Operation: protocol.OpCreate}, "still here"); je != nil {
		t.Fatalf("a write after the flood: %v %s", je, rawData(je))
	}
}
