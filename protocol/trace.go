package protocol

import (
	"encoding/json"
	"time"
)

// Trace notifications. Every request, session transition, validation
// result, write and error is a trace event kept in the daemon's store for
// the trace retention period.
const (
	// NotifyTraceEvent carries one new event to a connection that called
	// trace.follow. Its params are a TraceEventNotification.
	NotifyTraceEvent = "trace.event"
)

// TraceType is the type of a trace event. The types are stable; an
// event's Fields keys depend on its type.
type TraceType string

// Trace event types, every one the daemon records (TraceTypes lists them).
const (
	// TraceRequest is one handled JSON-RPC request: Method, and in Fields
	// duration_ms, and error_code and error when it failed. Acknowledged
	// session.append requests of one session are folded into one event
	// (its Time the first one's start; at the session's next event, or
	// after 1024 appends or 1s): seq (the highest), bytes (received so
	// far), end_marker_seen and duration_ms (the sum), and when it stands
	// for more than one, appends (how many), first_seq, max_duration_ms
	// and end_marker_seq (the first that saw the marker). A failed append
	// is an event of its own.
	TraceRequest TraceType = "request"
	// TraceStage is a session entering a stage: Fields stage, bytes, lines.
	TraceStage TraceType = "session.stage"
	// TraceWrite is a file written by finalize: Fields target, bytes, lines,
	// sha256, mode.
	TraceWrite TraceType = "session.write"
	// TraceTruncated is a session that ended without its end marker.
	TraceTruncated TraceType = "session.truncated"
	// TraceConflict is a target changed on disk during its session.
	TraceConflict TraceType = "session.conflict"
	// TraceValidation is the result of checking content before a write.
	TraceValidation TraceType = "validation"
	// TraceError is a failure that no request reported.
	TraceError TraceType = "error"
	// TraceSuppressed counts the events of rejected requests held back
	// because they came faster than the trace keeps them: Fields events,
	// since, by_reason and by_method (counts, at most 16 keys each, the
	// rest under "other").
	TraceSuppressed TraceType = "requests.suppressed"
	// TraceTxStage is a transaction entering a stage, one event per session
	// of it: Fields tx_id, stage, files ("kind path" each) and error.
	TraceTxStage TraceType = "tx.stage"
	// TraceSpoolImport is a recovery spool entry imported as a session:
	// Fields entry, target, bytes.
	TraceSpoolImport TraceType = "spool.import"
	// TraceSpoolProblem is a spool entry left in place because it cannot
	// be imported: Fields entry, reason, message.
	TraceSpoolProblem TraceType = "spool.problem"
	// TraceBackupDropped is an undo backup dropped to keep the store under
	// --store-max-bytes, oldest first: Fields target, bytes,
	// store_max_bytes. session.undo of that session answers
	// backup_dropped.
	TraceBackupDropped TraceType = "store.backup_dropped"
	// TraceCheckpoint is a workspace checkpoint taken: Fields
	// workspace_root, checkpoint_id, turn_id, files, changed,
	// stored_bytes, scan (watch or full), duration_ms.
	TraceCheckpoint TraceType = "checkpoint"
	// TraceCheckpointRefused is a workspace too big to record: Fields
	// workspace_root, files, bytes, limit. No checkpoint was taken.
	TraceCheckpointRefused TraceType = "checkpoint.refused"
	// TraceTurn is a turn beginning or ending: Fields workspace_root,
	// turn_id, agent, state, files.
	TraceTurn TraceType = "turn"
	// TraceTurnUndo is an undo or a redo: Fields turn_id, operation_id,
	// kind, dry_run, refused, and per outcome a count.
	TraceTurnUndo TraceType = "turn.undo"
	// TraceCheckpointDropped is checkpoints and turns dropped by
	// --checkpoint-retention or --store-max-bytes: Fields workspace_root,
	// checkpoints, turns, blobs, bytes, why.
	TraceCheckpointDropped TraceType = "checkpoint.dropped"
)

// TraceTypes lists every trace event type, for filters and other
// languages' copies.
var TraceTypes = []TraceType{TraceRequest, TraceStage, TraceWrite, TraceTruncated, TraceConflict,
	TraceValidation, TraceError, TraceSuppressed, TraceTxStage, TraceSpoolImport, TraceSpoolProblem, TraceBackupDropped,
	TraceCheckpoint, TraceCheckpointRefused, TraceTurn, TraceTurnUndo, TraceCheckpointDropped}

// TraceEvent is one stored trace event, as trace.list returns it and
// trace.event carries it. It is valid JSON by construction: strings are
// valid UTF-8 without NUL characters, numbers are finite, long strings are
// cut on a character boundary and marked.
type TraceEvent struct {
	// ID is unique and sorts in time order; pass it as After to page.
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// Type is one of TraceTypes; a client reading a newer daemon's events
	// may meet types it does not know.
	Type TraceType `json:"type"`
	// SessionID and Method are empty for events about no session or no
	// request.
	SessionID string `json:"session_id,omitempty"`
	Method    string `json:"method,omitempty"`
	// Fields is a JSON object whose keys depend on Type.
	Fields json.RawMessage `json:"fields,omitempty"`
}

// TraceFilter selects events by session and type.
type TraceFilter struct {
	SessionID string `json:"session_id,omitempty"`
	// Types are exact event types, or prefixes ending in "*" such as
	// "session.*". Empty means every type.
	Types []string `json:"types,omitempty"`
}

// TraceListParams are the params of trace.list. Events come oldest first.
type TraceListParams struct {
	TraceFilter
	// Since (inclusive) and Until (exclusive) bound the events' time.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// After continues a listing: only events whose ID sorts after it.
	After string `json:"after,omitempty"`
	// Before continues a Newest listing backwards: only events whose ID
	// sorts before it.
	Before string `json:"before,omitempty"`
	// Limit caps the number of events (default 100, at most 10000).
	Limit int `json:"limit,omitempty"`
	// Newest returns the newest Limit matching events instead of the
	// oldest, still oldest first.
	Newest bool `json:"newest,omitempty"`
}

// TraceListResult is the result of trace.list.
type TraceListResult struct {
	Events []TraceEvent `json:"events"`
	// More is true when more events matched than were returned. For an
	// oldest-first listing, Next is the After of the next page; for a
	// Newest listing, the Before of the next, older one.
	More bool   `json:"more,omitempty"`
	Next string `json:"next,omitempty"`
	// Stats describe the trace recorder since the daemon started.
	Stats TraceStats `json:"stats"`
}

// TraceStats count what happened to trace events since the daemon started.
type TraceStats struct {
	// Recorded events were accepted; Dropped ones were not, because the
	// recorder's buffer was full (the write path never waits for tracing).
	Recorded uint64 `json:"recorded"`
	Dropped  uint64 `json:"dropped"`
	// Stored events reached the store; StoreErrors counts failed batches.
	Stored      uint64 `json:"stored"`
	StoreErrors uint64 `json:"store_errors,omitempty"`
	// Pruned events were older than the retention period.
	Pruned uint64 `json:"pruned,omitempty"`
	// RetentionMS is how long events are kept.
	RetentionMS int64 `json:"retention_ms"`
	// Bytes is the size of the stored events and their index entries (keys
	// and values), which MaxBytes caps (0: no cap); Evicted counts events
	// deleted, oldest first, to stay under it.
	Bytes    int64  `json:"bytes"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
	Evicted  uint64 `json:"evicted,omitempty"`
	// Suppressed counts events of rejected requests that were only
	// counted, in requests.suppressed events, because they came too fast.
	Suppressed uint64 `json:"suppressed,omitempty"`
}

// TraceFollowParams are the params of trace.follow: which new events the
// connection receives.
type TraceFollowParams struct {
	TraceFilter
}

// TraceFollowResult is the result of trace.follow.
type TraceFollowResult struct {
	// Following is true: trace.event notifications follow until the
	// connection closes.
	Following bool `json:"following"`
}

// TraceEventNotification is the params of trace.event.
type TraceEventNotification struct {
	Event TraceEvent `json:"event"`
	// Dropped counts events this connection missed since its previous
	// notification because it read them too slowly.
	Dropped uint64 `json:"dropped,omitempty"`
}
