package controller

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// note is one notification from the daemon.
type note struct {
	method    string
	sessionID string
	params    json.RawMessage
}

// inbox holds notifications until the controller looks for them. They
// arrive on the client's read loop, which must not block or call back into
// the client, so they are only queued there. The read loop delivers a
// notification the daemon sent before a reply before that reply, so after
// an append returns, every notification sent before it is in the inbox.
type inbox struct {
	mu     sync.Mutex
	notes  []note
	signal chan struct{}
}

func newInbox() *inbox { return &inbox{signal: make(chan struct{}, 1)} }

// push is the client's OnNotification.
func (in *inbox) push(method string, params json.RawMessage) {
	var p struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal(params, &p) // a notification without a session is still kept
	in.mu.Lock()
	in.notes = append(in.notes, note{method: method, sessionID: p.SessionID, params: append(json.RawMessage(nil), params...)})
	in.mu.Unlock()
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

// take removes and returns the first notification matching method and
// session.
func (in *inbox) take(method, sessionID string) (note, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, n := range in.notes {
		if n.method == method && n.sessionID == sessionID {
			in.notes = append(in.notes[:i], in.notes[i+1:]...)
			return n, true
		}
	}
	return note{}, false
}

// takeAll removes and returns every notification with the method.
func (in *inbox) takeAll(method string) []note {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out, keep []note
	for _, n := range in.notes {
		if n.method == method {
			out = append(out, n)
		} else {
			keep = append(keep, n)
		}
	}
	in.notes = keep
	return out
}

// drop forgets the session's notifications with the method: an idle
// notification the daemon sent before a chunk it then acknowledged is
// stale.
func (in *inbox) drop(method, sessionID string) {
	for {
		if _, ok := in.take(method, sessionID); !ok {
			return
		}
	}
}

// wait returns the first notification matching method and session, waiting
// until it arrives, the timer fires or ctx ends.
func (in *inbox) wait(ctx context.Context, after func(time.Duration) <-chan time.Time, d time.Duration, method, sessionID string) (note, bool) {
	timer := after(d)
	for {
		if n, ok := in.take(method, sessionID); ok {
			return n, true
		}
		select {
		case <-in.signal:
		case <-timer:
			return in.take(method, sessionID)
		case <-ctx.Done():
			return note{}, false
		}
	}
}
