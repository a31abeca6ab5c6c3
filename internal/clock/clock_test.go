package clock_test

import (
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/clock"
)

func TestFakeRunsDueTimersInOrder(t *testing.T) {
	c := clock.NewFake(time.Unix(0, 0))
	var got []string
	c.AfterFunc(2*time.Second, func() { got = append(got, "b") })
	c.AfterFunc(time.Second, func() {
		got = append(got, "a")
		c.AfterFunc(500*time.Millisecond, func() { got = append(got, "a2") })
	})
	stopped := c.AfterFunc(1500*time.Millisecond, func() { got = append(got, "never") })
	if !stopped.Stop() {
		t.Fatal("Stop on a pending timer reported false")
	}
	c.Advance(1900 * time.Millisecond)
	if want := "a,a2"; join(got) != want {
		t.Fatalf("after 1.9s ran %q, want %q", join(got), want)
	}
	c.Advance(time.Second)
	if want := "a,a2,b"; join(got) != want {
		t.Fatalf("after 2.9s ran %q, want %q", join(got), want)
	}
	if got, want := c.Now(), time.Unix(0, 0).Add(2900*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// Reset moves a pending call, brings back a stopped one and schedules
// again one that already ran, on the fake clock as on the real one.
func TestFakeReset(t *testing.T) {
	c := clock.NewFake(time.Unix(0, 0))
	calls := 0
	tm := c.AfterFunc(time.Second, func() { calls++ })
	c.Advance(500 * time.Millisecond)
	if !tm.Reset(time.Second) {
		t.Error("Reset of a pending timer reported it was not pending")
	}
	c.Advance(900 * time.Millisecond)
	if calls != 0 {
		t.Fatalf("ran %d times 1.4 s in, after a reset at 0.5 s to 1 s", calls)
	}
	c.Advance(100 * time.Millisecond)
	if calls != 1 {
		t.Fatalf("ran %d times at 1.5 s, want 1", calls)
	}
	if tm.Reset(time.Second) {
		t.Error("Reset of a timer that ran reported it pending")
	}
	c.Advance(time.Second)
	if calls != 2 {
		t.Fatalf("ran %d times after a reset of a timer that ran, want 2", calls)
	}
	tm.Stop()
	tm.Reset(time.Second)
	c.Advance(time.Second)
	if calls != 3 {
		t.Fatalf("ran %d times after a reset of a stopped timer, want 3", calls)
	}
}
