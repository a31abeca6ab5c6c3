package trace

import (
	"strings"
	"sync/atomic"

	"github.com/orion-agent/orion/protocol"
)

// follower is one subscriber to new events.
type follower struct {
	filter  protocol.TraceFilter
	ch      chan protocol.TraceEvent
	dropped atomic.Uint64
}

// Follow calls deliver with every event stored from now on that matches
// filter, in the order they were stored, from a goroutine of its own, one
// call at a time. A follower slower than the events misses some; the next
// notification counts them in Dropped. Follow never slows the batcher.
//
// stop ends the subscription; deliver is not called after the events
// already queued for it. The daemon calls stop when the connection that
// asked to follow closes.
func (t *Tracer) Follow(filter protocol.TraceFilter, deliver func(protocol.TraceEventNotification)) (stop func()) {
	f := &follower{filter: filter, ch: make(chan protocol.TraceEvent, t.opts.FollowBuffer)}
	t.followMu.Lock()
	select {
	case <-t.quit:
		t.followMu.Unlock()
		return func() {}
	default:
	}
	t.followers[f] = struct{}{}
	t.followMu.Unlock()
	go func() {
		for ev := range f.ch {
			deliver(protocol.TraceEventNotification{Event: ev, Dropped: f.dropped.Swap(0)})
		}
	}()
	return func() {
		t.followMu.Lock()
		defer t.followMu.Unlock()
		if _, ok := t.followers[f]; ok {
			delete(t.followers, f)
			close(f.ch)
		}
	}
}

// fanOut offers entries to every follower without waiting for any.
func (t *Tracer) fanOut(entries []Entry) {
	t.followMu.RLock()
	defer t.followMu.RUnlock()
	for f := range t.followers {
		for _, e := range entries {
			if !Match(f.filter, e.Event) {
				continue
			}
			select {
			case f.ch <- e.Event:
			default:
				f.dropped.Add(1)
			}
		}
	}
}

// Match reports whether ev passes filter: same session when one is given,
// and a type among filter.Types (exactly, or by a prefix ending in "*").
func Match(filter protocol.TraceFilter, ev protocol.TraceEvent) bool {
	if filter.SessionID != "" && ev.SessionID != filter.SessionID {
		return false
	}
	return matchType(filter.Types, string(ev.Type))
}

func matchType(types []string, typ string) bool {
	if len(types) == 0 {
		return true
	}
	for _, want := range types {
		if prefix, ok := strings.CutSuffix(want, "*"); ok {
			if strings.HasPrefix(typ, prefix) {
				return true
			}
		} else if want == typ {
			return true
		}
	}
	return false
}
