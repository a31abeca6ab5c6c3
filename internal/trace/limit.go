package trace

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/protocol"
)

// LimiterOptions configure a Limiter. The zero value takes every default.
type LimiterOptions struct {
	// Rate is how many events a second pass on average (default 10), and
	// Burst how many may pass at once after a quiet spell (default 50).
	Rate  float64
	Burst float64
	// Interval is how long held-back events are counted before their
	// summary is recorded (default 1s).
	Interval time.Duration
	Clock    clock.Clock
}

// Defaults for LimiterOptions: far above the rejected requests of a
// working client (a few a minute, when a model gets a call wrong), far
// below a flood.
const (
	DefaultLimitRate     = 10
	DefaultLimitBurst    = 50
	DefaultLimitInterval = time.Second
)

// maxSummaryKeys bounds the reasons and methods a summary names one by
// one; the rest are counted under "other".
const maxSummaryKeys = 16

// Limiter is a Recorder that passes events on at a bounded rate (a token
// bucket) and counts the rest: at most once an Interval it records one
// summary event (protocol.TraceSuppressed) with how many it held back, by
// reason and by method. The daemon sends the events of rejected requests
// through it, so a client that floods it with bad requests costs the trace
// store a few events a second, not one per request.
type Limiter struct {
	rec  Recorder
	opts LimiterOptions

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	held    uint64
	since   time.Time
	reasons map[string]uint64
	methods map[string]uint64
	timer   clock.Timer
	stopped bool

	suppressed atomic.Uint64
}

// NewLimiter returns a Limiter that records to rec.
func NewLimiter(rec Recorder, opts LimiterOptions) *Limiter {
	if opts.Rate <= 0 {
		opts.Rate = DefaultLimitRate
	}
	if opts.Burst < 1 {
		opts.Burst = DefaultLimitBurst
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultLimitInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Limiter{rec: rec, opts: opts, tokens: opts.Burst}
}

// Record passes ev on if the rate allows, else counts it for the next
// summary. It never waits.
func (l *Limiter) Record(ev Event) {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.opts.Burst, l.tokens+now.Sub(l.last).Seconds()*l.opts.Rate)
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
	if l.tokens >= 1 {
		l.tokens--
		l.mu.Unlock()
		l.rec.Record(ev)
		return
	}
	l.suppressed.Add(1)
	if l.held == 0 {
		l.since = now
		l.reasons = make(map[string]uint64)
		l.methods = make(map[string]uint64)
	}
	l.held++
	reason, _ := ev.field("reason").(string)
	countKey(l.reasons, reason)
	countKey(l.methods, ev.Method)
	if l.timer == nil && !l.stopped {
		l.timer = l.opts.Clock.AfterFunc(l.opts.Interval, l.Flush)
	}
	l.mu.Unlock()
}

// countKey counts k in m, under "other" once m names maxSummaryKeys keys,
// so a flood of distinct values cannot grow a summary.
func countKey(m map[string]uint64, k string) {
	if k == "" {
		k = "none"
	}
	k = CleanString(k, protocol.MaxMethodBytes)
	if _, ok := m[k]; !ok && len(m) >= maxSummaryKeys {
		k = "other"
	}
	m[k]++
}

// Flush records the summary of the events held back since the last one,
// if any. The Limiter's timer calls it; call it once more before the
// recorder closes so the last count is not lost.
func (l *Limiter) Flush() {
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.held == 0 {
		l.mu.Unlock()
		return
	}
	ev := Event{
		Time: l.opts.Clock.Now(),
		Type: protocol.TraceSuppressed,
		Fields: map[string]any{
			"events":    l.held,
			"since":     l.since,
			"by_reason": l.reasons,
			"by_method": l.methods,
		},
	}
	l.held, l.reasons, l.methods = 0, nil, nil
	l.mu.Unlock()
	l.rec.Record(ev)
}

// Stop flushes and cancels the timer: later events are still limited, and
// their summary waits for the next Flush.
func (l *Limiter) Stop() {
	l.Flush()
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

// Suppressed counts every event held back since NewLimiter.
func (l *Limiter) Suppressed() uint64 { return l.suppressed.Load() }
