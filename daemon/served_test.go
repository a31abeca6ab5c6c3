package daemon

import (
	"context"
	"testing"
)

// TestServedContextPoisonedOnceServed: a request served on its connection's
// read loop leaves its memory to the connection's next request; under the
// race detector (the tests' runs) a context kept past its request panics
// when it is used, rather than answering for the next request.
func TestServedContextPoisonedOnceServed(t *testing.T) {
	if !poisonServed {
		t.Skip("a served request's memory is poisoned under the race detector only (go test -race)")
	}
	r := &served{ctx: context.Background()}
	r.tctx = turnContext{Context: r.ctx, r: r}
	var kept context.Context = &r.tctx
	r.release()
	defer func() {
		if recover() == nil {
			t.Fatal("a context kept past its request was used without a panic")
		}
	}()
	kept.Done()
}
