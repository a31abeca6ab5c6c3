package daemon

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
)

// blocking is a request that says it started and waits to be let go.
type blocking struct {
	started chan<- []byte
	release <-chan struct{}
}

func (b blocking) serve() {
	b.started <- goroutineID()
	<-b.release
}

func goroutineID() []byte {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return id
}

// Requests beyond the workers kept are served at once, each on a goroutine
// of its own: none waits for another to finish (a client's read that waits
// on its own write would otherwise never end).
func TestWorkersServeEveryRequestAtOnce(t *testing.T) {
	w := newWorkers()
	defer w.close()
	started := make(chan []byte)
	release := make(chan struct{})
	n := 3 * maxIdleWorkers
	for range n {
		w.run(blocking{started: started, release: release})
	}
	for i := range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d requests started; the others wait", i, n)
		}
	}
	close(release)
}

// Requests one after another are served by the workers kept: few
// goroutines serve many requests, so each keeps the stack it grew.
func TestWorkersKeepGoroutinesBetweenRequests(t *testing.T) {
	w := newWorkers()
	defer w.close()
	started := make(chan []byte)
	release := make(chan struct{})
	close(release)
	seen := map[string]bool{}
	const n = 100
	for range n {
		w.run(blocking{started: started, release: release})
		seen[string(<-started)] = true
	}
	if len(seen) > maxIdleWorkers+1 {
		t.Fatalf("%d requests one after another were served by %d goroutines, want at most %d", n, len(seen), maxIdleWorkers+1)
	}
}

// Once closed, the workers kept end, and a request still handed to them is
// served: a daemon that stops leaves no goroutine behind.
func TestWorkersEndWhenClosed(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newWorkers()
	started := make(chan []byte, 3*maxIdleWorkers)
	release := make(chan struct{})
	for range 3 * maxIdleWorkers {
		w.run(blocking{started: started, release: release})
	}
	close(release)
	w.close()
	var served sync.WaitGroup
	served.Add(1)
	w.run(servedFunc(served.Done))
	served.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after the workers closed, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

type servedFunc func()

func (f servedFunc) serve() { f() }
