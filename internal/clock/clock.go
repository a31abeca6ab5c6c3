// Package clock lets the daemon's timers (idle prompts, auto-finalize,
// retention) run on real time in production and on a fake, hand-advanced
// time in tests, so no test sleeps to wait for a timer.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and schedules functions.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled call that can be cancelled.
type Timer interface {
	// Stop cancels the call; it reports whether it was still pending.
	Stop() bool
	// Reset schedules the call again, d from now, whether it was
	// pending, stopped or done; it reports whether it was pending. A
	// timer rescheduled on every request costs nothing new this way.
	Reset(d time.Duration) bool
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a clock that moves only when Advance is called. Due functions run
// synchronously inside Advance, in time order, so a test knows they have
// finished when Advance returns.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *Fake
	at      time.Time
	f       func()
	stopped bool
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = false
	t.at = t.c.now.Add(d)
	for _, o := range t.c.timers {
		if o == t {
			return was
		}
	}
	t.c.timers = append(t.c.timers, t)
	return was
}

// Advance moves the clock forward by d, running every function that falls
// due, including ones scheduled by the functions it runs.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for i, t := range c.timers {
			if t.stopped {
				continue
			}
			if !t.at.After(end) {
				due = t
				c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
			}
			break
		}
		if due == nil {
			c.now = end
			c.timers = pruneStopped(c.timers)
			c.mu.Unlock()
			return
		}
		due.stopped = true
		c.now = due.at
		c.mu.Unlock()
		due.f()
	}
}

func pruneStopped(ts []*fakeTimer) []*fakeTimer {
	kept := ts[:0]
	for _, t := range ts {
		if !t.stopped {
			kept = append(kept, t)
		}
	}
	return kept
}
