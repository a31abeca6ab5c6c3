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
