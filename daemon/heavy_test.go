package daemon

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/protocol"
)

func heavyTestConn(t *testing.T) *jsonrpc2.Conn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	rpc := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(a, jsonrpc2.VSCodeObjectCodec{}),
		handlerFunc(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}))
	t.Cleanup(func() { rpc.Close() })
	return rpc
}

// Many heavy requests at once, on a few connections: never more than one
// reply per connection, nor maxHeavyReplies in all, is held at a time.
func TestHeavyGateBoundsRepliesPerConnectionAndInAll(t *testing.T) {
	var g heavyGate
	const conns, each = maxHeavyReplies + 2, 16
	var global, globalMax atomic.Int64
	per := make([]atomic.Int64, conns)
	perMax := make([]atomic.Int64, conns)
	raise := func(max *atomic.Int64, v int64) {
		for {
			m := max.Load()
			if v <= m || max.CompareAndSwap(m, v) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i := range conns {
		c := heavyTestConn(t)
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, ok := g.acquire(c)
				if !ok {
					t.Error("acquire on an open connection failed")
					return
				}
				raise(&perMax[i], per[i].Add(1))
				raise(&globalMax, global.Add(1))
				for range 50 {
					runtime.Gosched()
				}
				per[i].Add(-1)
				global.Add(-1)
				release()
			}()
		}
	}
	wg.Wait()
	for i := range conns {
		if m := perMax[i].Load(); m != 1 {
			t.Errorf("connection %d held %d heavy replies at once, want 1", i, m)
		}
	}
	if m := globalMax.Load(); m > maxHeavyReplies {
		t.Errorf("%d heavy replies held at once, want at most %d", m, maxHeavyReplies)
	}
	if len(g.conns) != 0 {
		t.Errorf("%d connection slots left after every request was done", len(g.conns))
	}
}

// A request waiting for its connection's slot gives up when the
// connection closes, holding nothing.
func TestHeavyGateWaiterLeavesWithItsConnection(t *testing.T) {
	var g heavyGate
	c := heavyTestConn(t)
	release, ok := g.acquire(c)
	if !ok {
		t.Fatal("first acquire failed")
	}
	res := make(chan bool)
	go func() {
		_, ok := g.acquire(c)
		res <- ok
	}()
	c.Close()
	if <-res {
		t.Fatal("a waiter on a closed connection acquired")
	}
	release()
	if len(g.conns) != 0 || len(g.global) != 0 {
		t.Errorf("left held: %d connections, %d daemon-wide", len(g.conns), len(g.global))
	}
}

func TestHeavyMethods(t *testing.T) {
	for name, m := range methods {
		want := name == protocol.MethodSessionContent || name == protocol.MethodSessionList || name == protocol.MethodTraceList ||
			name == protocol.MethodTurnList || name == protocol.MethodTurnGet
		if m.heavy != want {
			t.Errorf("%s: heavy %v, want %v", name, m.heavy, want)
		}
	}
}
