package failpoint

import (
	"context"
	"sync"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse(" tx.renamed=2, tx.committed=1 ,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["tx.renamed"] != 2 || got["tx.committed"] != 1 {
		t.Errorf("Parse = %v", got)
	}
	if _, actions, err := parse("a=1:panic,b=2,c=1:wait"); err != nil || actions["a"] != "panic" || actions["b"] != "" || actions["c"] != "wait" {
		t.Errorf("parse: actions %v, err %v", actions, err)
	}
	for _, bad := range []string{"x", "x=0", "=1", "x=y", "x=1:explode", "x=:panic"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// An unarmed point does nothing; the test process would die otherwise.
func TestHitUnarmed(t *testing.T) {
	for range 3 {
		Hit("tx.renamed")
		Wait(context.Background(), "tx.renamed")
	}
}

// A point armed with :wait holds Wait until its context is done, on the
// armed pass only; Hit, which has no context to wait on, passes it.
func TestWait(t *testing.T) {
	defer func(a map[string]int, act map[string]string) { armed, actions = a, act }(armed, actions)
	var err error
	if armed, actions, err = parse("test.wait=2:wait"); err != nil {
		t.Fatal(err)
	}
	Hit("test.wait")
	Wait(context.Background(), "test.wait") // the first pass
	ctx := &watchedCtx{Context: context.Background(), asked: make(chan struct{}), done: make(chan struct{})}
	returned := make(chan struct{})
	go func() {
		Wait(ctx, "test.wait") // the armed pass
		close(returned)
	}()
	<-ctx.asked
	select {
	case <-returned:
		t.Fatal("Wait returned on its armed pass before its context was done")
	default:
	}
	close(ctx.done)
	<-returned
	Wait(context.Background(), "test.wait") // past the armed pass
}

// watchedCtx tells when its Done channel is asked for.
type watchedCtx struct {
	context.Context
	once        sync.Once
	asked, done chan struct{}
}

func (c *watchedCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.done
}
