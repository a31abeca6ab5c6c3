package attack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// Environment of the helper process that holds connections for
// TestConnsFairShare: another process, so another peer pid.
const (
	holdSocketEnv = "ORION_ATTACK_HOLD_SOCKET"
	holdCountEnv  = "ORION_ATTACK_HOLD_COUNT"
)

// TestHoldConnectionsHelper is not a test: run by TestConnsFairShare as
// another process, it opens $ORION_ATTACK_HOLD_COUNT connections to the
// socket, asks daemon.status once on each, says on stdout how many the
// daemon kept open and how many it refused, and holds them, idle, until
// its stdin closes.
func TestHoldConnectionsHelper(t *testing.T) {
	socket := os.Getenv(holdSocketEnv)
	if socket == "" {
		t.Skip("helper process of TestConnsFairShare")
	}
	n, _ := strconv.Atoi(os.Getenv(holdCountEnv))
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.DialTimeout("unix", socket, 10*time.Second)
		if err != nil {
			fmt.Printf("error %v\n", err)
			return
		}
		conns = append(conns, c)
	}
	// Each asks daemon.status once: a held connection is answered, a
	// refused one has its too_many_connections frame (written at accept,
	// before the daemon closed it). Telling them apart by silence would
	// count a refusal still in the daemon's accept queue as held.
	var held, refused, lost atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.WriteString(c, frameOf(statusRequest)) // fails once refused; its frame is there to read
			r, err := (&rawConn{t: t, c: c, r: bufio.NewReader(c)}).readReply()
			switch {
			case err == nil && r.Error == nil:
				held.Add(1)
			case err == nil && r.Error.Data.Reason == protocol.ReasonTooManyConnections:
				refused.Add(1)
			default:
				lost.Add(1)
			}
		}()
	}
	wg.Wait()
	if lost.Load() > 0 {
		fmt.Printf("error %d connections neither answered nor refused\n", lost.Load())
		return
	}
	fmt.Printf("held %d refused %d\n", held.Load(), refused.Load())
	bufio.NewReader(os.Stdin).ReadString('\n')
	// Unreachable, the connections would be closed by their finalizers at
	// the next garbage collection, and the daemon would admit others.
	runtime.KeepAlive(conns)
}

// holder is a helper process holding connections.
type holder struct {
	cmd           *exec.Cmd
	held, refused int
	stop          func()
}

// hold starts a process that opens n idle connections to d and keeps them.
func hold(t *testing.T, d *testdaemon.Daemon, n int) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldConnectionsHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdSocketEnv+"="+d.Socket, holdCountEnv+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd}
	h.stop = sync.OnceFunc(func() {
		stdin.Close()
		cmd.Wait()
	})
	t.Cleanup(h.stop)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "held %d refused %d", &h.held, &h.refused); err == nil {
			return h
		}
		if len(sc.Text()) > 5 && sc.Text()[:5] == "error" {
			t.Fatalf("helper: %s", sc.Text())
		}
	}
	t.Fatalf("the helper process ended without saying what it holds: %v", sc.Err())
	return nil
}

// statusLatency dials a fresh connection, as `orionctl status` does, and
// times daemon.status on it; it fails the test when no answer comes.
func statusLatency(t *testing.T, d *testdaemon.Daemon) (time.Duration, protocol.StatusResult) {
	t.Helper()
	start := time.Now()
	c := dialRaw(t, d)
	defer c.c.Close()
	c.send(frameOf(statusRequest))
	r := c.mustReply()
	took := time.Since(start)
	if r.Error != nil {
		t.Fatalf("daemon.status while connections are held: %v", r)
	}
	var st protocol.StatusResult
	if err := json.Unmarshal(r.Result, &st); err != nil {
		t.Fatal(err)
	}
	return took, st
}

// TestConnsFairShare: one process opening 1,024 idle connections holds
// only its share of the limit (a quarter) and every other client is
// served; with the whole limit held by four such processes, daemon.status
// still answers through the status reserve. Latencies are logged, not
// asserted: each call must be answered (within readReply's 10 s), however
// loaded the machine.
func TestConnsFairShare(t *testing.T) {
	d := testdaemon.Start(t)
	_, st := statusLatency(t, d)
	limit, share := st.MaxConnections, st.MaxClientConnections
	if share <= 0 || share >= limit {
		t.Fatalf("daemon.status: max_connections %d, max_client_connections %d", limit, share)
	}
	greedy := hold(t, d, 1024)
	t.Logf("one process dialled 1024 connections: %d held, %d refused (limit %d, its share %d)",
		greedy.held, greedy.refused, limit, share)
	if greedy.held != share || greedy.refused != 1024-share {
		t.Fatalf("the greedy process holds %d connections and was refused %d; want its share %d held", greedy.held, greedy.refused, share)
	}
	measure := func(what string) {
		var lat []time.Duration
		for range 20 {
			took, _ := statusLatency(t, d)
			lat = append(lat, took)
		}
		slices.Sort(lat)
		t.Logf("%s: daemon.status on a fresh connection, 20 calls: median %v, max %v", what, lat[len(lat)/2], lat[len(lat)-1])
	}
	measure("one process holding its share")
	// Three more processes take the rest of the limit.
	rest := limit - share
	for rest > 0 {
		h := hold(t, d, min(share, rest))
		rest -= h.held
		if h.held == 0 {
			t.Fatalf("a process could hold no connection with %d of the limit left", rest)
		}
	}
	took, st := statusLatency(t, d)
	t.Logf("limit held by %d processes: daemon.status answered in %v through the status reserve (%d connections)",
		(limit+share-1)/share, took, st.Connections)
	if st.Connections <= limit {
		t.Fatalf("daemon.status counts %d connections with the limit %d held", st.Connections, limit)
	}
	measure("whole limit held")
}
