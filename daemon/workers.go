package daemon

import "sync/atomic"

// maxIdleWorkers bounds the goroutines kept waiting for requests (workers).
// A burst beyond it is still served, each request on a goroutine of its
// own, which ends with it.
const maxIdleWorkers = 16

// workers serve the requests that are not served on their connection's
// read loop (handler.direct). A goroutine started per request begins with
// the runtime's smallest stack, and a session.write's path (the check, the
// journal, the file's syncs) grows it four or five times, each time copying
// the stack: a few percent of the request's CPU. A worker kept between
// requests keeps the stack it grew (the collector may halve it while the
// worker waits, which one growth undoes).
//
// The zero value starts a goroutine per request, as the handlers that tests
// build by hand expect.
type workers struct {
	// work hands a request to a waiting worker; unbuffered, so that a
	// request is handed only to a worker free to serve it now.
	work chan workItem
	// stop ends the waiting workers, once no request is in flight.
	stop chan struct{}
	// kept counts the workers that wait for work, or serve what it gave.
	kept atomic.Int32
}

// workItem is a request as a worker serves it: a *served.
type workItem interface{ serve() }

func newWorkers() *workers {
	return &workers{work: make(chan workItem), stop: make(chan struct{})}
}

// run serves r on a waiting worker, or on a new goroutine when none waits.
func (w *workers) run(r workItem) {
	if w == nil || w.work == nil {
		go r.serve()
		return
	}
	select {
	case w.work <- r:
	default:
		go w.serveThenWait(r)
	}
}

// serveThenWait serves r, then waits for more work if fewer than
// maxIdleWorkers do.
func (w *workers) serveThenWait(r workItem) {
	r.serve()
	if w.kept.Add(1) > maxIdleWorkers {
		w.kept.Add(-1)
		return
	}
	defer w.kept.Add(-1)
	for {
		select {
		case r := <-w.work:
			r.serve()
		case <-w.stop:
			return
		}
	}
}

// close ends the waiting workers; call it once no request is in flight.
func (w *workers) close() { close(w.stop) }
