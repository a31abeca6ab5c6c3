// Package trace records what the daemon did — requests, session
// transitions, validation results, writes, errors — as events that are valid
// JSON by construction, keyed for lookup by session and by time.
//
// Tracer is the Recorder the daemon uses: Record never waits; a background
// batcher sanitizes each event (see Sanitize), stores it in the daemon's
// bbolt file (buckets trace.events, keyed by time, and trace.sessions, the
// per-session index), streams it to followers (trace.follow) and sinks
// (PostgreSQL, in package tracepg), and prunes events past the retention
// period. List answers trace.list.
package trace

import (
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Event is one thing that happened.
type Event struct {
	Time time.Time `json:"time"`
	// Type is stable: "request", "session.stage", "session.write",
	// "session.truncated", "session.conflict", "validation", "error" (the
	// protocol.Trace* constants).
	Type      protocol.TraceType `json:"type"`
	SessionID string             `json:"session_id,omitempty"`
	Method    string             `json:"method,omitempty"`
	Fields    map[string]any     `json:"fields,omitempty"`
	// Attrs are fields too, typed (see Attr): the batcher encodes them
	// without reflection. Record keeps the slice: do not modify it
	// afterwards. A key in both Attrs and Fields takes the Attr's value.
	Attrs []Attr `json:"-"`
}

// Recorder takes events. Record must not block the caller for I/O: the
// write path calls it.
type Recorder interface {
	Record(Event)
}

// Discard is a Recorder that drops every event.
type Discard struct{}

// Record drops ev.
func (Discard) Record(Event) {}
