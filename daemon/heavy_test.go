package daemon

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

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
		c := &conn{pid: i}
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, ok := g.acquire(context.Background(), c)
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
// connection closes (its context is done), holding nothing.
func TestHeavyGateWaiterLeavesWithItsConnection(t *testing.T) {
	var g heavyGate
	c := &conn{}
	ctx, closeConn := context.WithCancel(context.Background())
	release, ok := g.acquire(ctx, c)
	if !ok {
		t.Fatal("first acquire failed")
	}
	res := make(chan bool)
	go func() {
		_, ok := g.acquire(ctx, c)
		res <- ok
	}()
	closeConn()
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
