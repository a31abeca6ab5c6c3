package daemon

import "testing"

// closed reports whether c is closed (nil: there is nothing to wait for).
func closed(c <-chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestSessionOrder: a session's request waits for the one read before it,
// and only for that one; another session's, or one whose predecessor is
// done, waits for nothing; nothing is left behind once all are done.
func TestSessionOrder(t *testing.T) {
	o := newSessionOrder()
	a1 := o.enqueue("a")
	a2 := o.enqueue("a")
	b1 := o.enqueue("b")
	a3 := o.enqueue("a")
	if a1.wait != nil || b1.wait != nil {
		t.Fatal("the first request of a session waits")
	}
	if closed(a2.wait) || closed(a3.wait) {
		t.Fatal("a request goes before the one ahead of it is done")
	}
	a1.done()
	if !closed(a2.wait) || closed(a3.wait) {
		t.Fatalf("after the first is done: second may go %v, third %v; want true, false", closed(a2.wait), closed(a3.wait))
	}
	b1.done()
	a2.done()
	if !closed(a3.wait) {
		t.Fatal("the third waits after the second is done")
	}
	a3.done()
	if a4 := o.enqueue("a"); a4.wait != nil {
		t.Fatal("a request waits for a session with none ahead of it")
	} else {
		a4.done()
	}
	if len(o.tails) != 0 || len(o.next) != 0 {
		t.Fatalf("left behind: %d sessions, %d waits", len(o.tails), len(o.next))
	}
	turn{}.done()
}
