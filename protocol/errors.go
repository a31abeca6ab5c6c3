package protocol

import "fmt"

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Application error codes, in JSON-RPC's implementation-defined range. Each
// error also carries a Reason in its data, more specific than the code;
// clients switch on the code and show or log the reason.
const (
	// CodeSessionNotFound: no session has the given id.
	CodeSessionNotFound = -32001
	// CodeSessionState: the session's stage does not allow the call (it is
	// completed, aborted, or past its end marker).
	CodeSessionState = -32002
	// CodeSeqGap: the chunk's seq skips ahead of the next expected seq.
	CodeSeqGap = -32003
	// CodeSeqConflict: a seq already acknowledged was sent with other bytes.
	CodeSeqConflict = -32004
	// CodeTargetExists: create was asked for a file that exists.
	CodeTargetExists = -32005
	// CodePathNotAllowed: the target resolves outside every allowed root.
	CodePathNotAllowed = -32006
	// CodeInvalidTarget: the target is a directory, a special file, or its
	// parent directory is missing.
	CodeInvalidTarget = -32007
	// CodeTooLarge: a chunk, a session or a field of the params exceeds
	// its size limit; data.limit gives the limit.
	CodeTooLarge = -32008
	// CodeMarkerMissing: finalize was called before the end marker arrived
	// and without end_of_input.
	CodeMarkerMissing = -32009
	// CodeInvalidOperation: the operation is unknown.
	CodeInvalidOperation = -32010
	// CodeIO: the daemon failed to read or write a file or its store.
	CodeIO = -32011
	// CodeTargetChanged: the target changed on disk since the session
	// began; finalize with force to write anyway.
	CodeTargetChanged = -32012
)

// Application error codes of edits, transactions and validation.
const (
	// CodeValidationFailed: the content was refused by a strict policy; the
	// session is needs_corrections and data.validation says why.
	CodeValidationFailed = -32013
	// CodeEditFailed: a patch or an edit did not apply; data.edit says, per
	// block or hunk, which parts did and which to resend.
	CodeEditFailed = -32014
	// CodeTxNotFound: no transaction has the given id.
	CodeTxNotFound = -32015
	// CodeTxFailed: a commit checked every file and refused, or failed
	// while writing and rolled every file back; data.files says which file
	// failed and why. Nothing of the transaction is on disk.
	CodeTxFailed = -32016
)

// Transport error codes: the connection itself, not a request on it.
// Malformed messages take the standard codes (CodeParseError,
// CodeInvalidRequest) and an over-long one CodeTooLarge, each with its own
// reason below.
const (
	// CodeTooManyConnections: the daemon serves --max-connections clients
	// already; it answers with this (id null) and closes the connection.
	// Retry later, or close idle connections.
	CodeTooManyConnections = -32020
	// CodeTooManySessions: the daemon holds --max-sessions unfinished
	// sessions already, or this client --max-client-sessions; finish,
	// abort or wait for some (data.limit gives the limit).
	CodeTooManySessions = -32021
	// CodeRequestCancelled answers a request its client cancelled with
	// CancelRequest before it was done: the code LSP and vscode-jsonrpc
	// give it, outside the range of the daemon's own codes.
	CodeRequestCancelled = -32800
)

// CancelRequest is the notification a client sends to cancel one of its
// requests, as LSP defines it (vscode-jsonrpc sends it when a request's
// cancellation token fires): params {"id": the request's id, as it was
// sent}. A listing or a session's content stops and is answered
// CodeRequestCancelled; other requests are not cancelled (a write that
// has begun is finished, as if it had not been asked to stop).
const CancelRequest = "$/cancelRequest"

// Application error codes of checkpoints and turns.
const (
	// CodeTurnNotFound: no turn, checkpoint or undo operation has the
	// given id (never existed, or dropped by retention).
	CodeTurnNotFound = -32030
	// CodeTurnState: the turn's state does not allow the call (still
	// open, already undone, not recorded).
	CodeTurnState = -32031
	// CodeWorkspaceTooBig: the workspace is over the checkpoint limits
	// after the ignores; it gets no checkpoints.
	CodeWorkspaceTooBig = -32032
)

// Reasons carried in ErrorData.Reason. They are stable strings a client or a
// model can act on.
const (
	ReasonSessionNotFound     = "session_not_found"
	ReasonSessionClosed       = "session_closed"
	ReasonMarkerAlreadySeen   = "end_marker_already_seen"
	ReasonSeqGap              = "seq_gap"
	ReasonSeqConflict         = "seq_conflict"
	ReasonSeqZero             = "seq_zero"
	ReasonTargetExists        = "target_exists"
	ReasonOutsideRoots        = "outside_allowed_roots"
	ReasonSymlinkEscape       = "symlink_escape"
	ReasonRelativePath        = "relative_path_without_workspace_root"
	ReasonWorkspaceNotAllowed = "workspace_root_not_allowed"
	ReasonOutsideWorkspace    = "outside_workspace"
	ReasonIsDirectory         = "target_is_directory"
	ReasonSpecialFile         = "target_is_special_file"
	ReasonParentMissing       = "parent_directory_missing"
	ReasonProtected           = "protected_path"
	// ReasonRootRefused: daemon.allow_root of a directory that may not be
	// an allowed root (data.path).
	ReasonRootRefused      = "root_refused"
	ReasonPathChanged      = "path_changed"
	ReasonChunkTooLarge    = "chunk_too_large"
	ReasonSessionTooLarge  = "session_too_large"
	ReasonMarkerMissing    = "end_marker_missing"
	ReasonUnknownOperation = "unknown_operation"
	ReasonMissingField     = "missing_field"
	ReasonMalformedParams  = "malformed_params"
	ReasonUnknownMethod    = "unknown_method"
	ReasonTargetChanged    = "target_changed"
	ReasonNotTruncated     = "session_not_truncated"
	ReasonAlreadyContinued = "session_already_continued"
	ReasonNothingToUndo    = "nothing_to_undo"
	ReasonBackupFailed     = "backup_failed"
	ReasonIO               = "io_error"
	ReasonInternal         = "internal_error"
)

// Reasons for params out of bounds.
const (
	// ReasonFieldTooLarge: a string or list in the params is over its limit
	// (CodeTooLarge); data.field names it and data.limit gives the limit, in
	// bytes for a string and in items for a list.
	ReasonFieldTooLarge = "field_too_large"
	// ReasonInvalidDuration: a duration in the params is negative or above
	// its maximum (CodeInvalidParams); data.field names it and data.limit
	// gives the maximum in milliseconds.
	ReasonInvalidDuration = "invalid_duration"
)

// Reasons of edits.
const (
	// ReasonEditFailed goes with CodeEditFailed.
	ReasonEditFailed = "edit_failed"
	// ReasonUnsupportedEncoding goes with CodeEditFailed (an edit) or
	// CodeValidationFailed (a whole-file write): the file is in an
	// encoding whose bytes would not survive decoding to UTF-8 and back
	// (a UTF-16 file with an unpaired surrogate), or the new text has a
	// character that encoding cannot hold, so nothing is written.
	ReasonUnsupportedEncoding = "unsupported_encoding"
	// ReasonInvalidPatchSpec: patch_spec is missing or malformed.
	ReasonInvalidPatchSpec = "invalid_patch_spec"
	// ReasonTargetMissing: must_exist (or a patch or edit) found no file.
	ReasonTargetMissing = "target_missing"
)

// Reasons of transactions.
const (
	ReasonTxNotFound   = "tx_not_found"
	ReasonTxState      = "tx_state"
	ReasonTxMember     = "tx_member"
	ReasonTxRefused    = "tx_refused"
	ReasonTxRolledBack = "tx_rolled_back"
	ReasonDuplicate    = "duplicate_target"
)

// Reasons of validation and corrected attempts.
const (
	// ReasonValidationFailed goes with CodeValidationFailed.
	ReasonValidationFailed = "validation_failed"
	// ReasonAttemptsExhausted: the corrected-attempt limit was reached.
	ReasonAttemptsExhausted = "attempts_exhausted"
	// ReasonNotNeedsCorrections: supersedes named a session that is not
	// needs_corrections.
	ReasonNotNeedsCorrections = "session_not_needs_corrections"
	// ReasonInvalidUTF8: the content is not valid UTF-8 and the policy
	// refuses it.
	ReasonInvalidUTF8 = "invalid_utf8"
)

// Reasons of the transport. The daemon answers these with id null when the
// message's id could not be read, and closes the connection after
// message_too_large, malformed_frame and too_many_connections; after the
// others the connection stays usable.
const (
	// ReasonMessageTooLarge: a frame's Content-Length is over the daemon's
	// message limit (data.limit), derived from --max-chunk-bytes.
	ReasonMessageTooLarge = "message_too_large"
	// ReasonMalformedFrame: the Content-Length framing itself is broken (a
	// header line too long or not ending in CRLF, no Content-Length).
	ReasonMalformedFrame = "malformed_frame"
	// ReasonInvalidJSON: the frame's body is not JSON (code -32700).
	ReasonInvalidJSON = "invalid_json"
	// ReasonInvalidRequest: the body is JSON but not a JSON-RPC 2.0 request
	// (code -32600).
	ReasonInvalidRequest = "invalid_request"
	// ReasonBatchNotSupported: the body is a JSON-RPC batch (code -32600).
	ReasonBatchNotSupported = "batch_not_supported"
	// ReasonTooManyConnections goes with CodeTooManyConnections.
	ReasonTooManyConnections = "too_many_connections"
	// ReasonRequestCancelled goes with CodeRequestCancelled.
	ReasonRequestCancelled = "request_cancelled"
	// ReasonRawContentNotTaken: a frame carried raw content
	// (HeaderRawLength) for a method that takes none (code -32602).
	ReasonRawContentNotTaken = "raw_content_not_taken"
	// ReasonContentSentTwice: a frame carried raw content and its params'
	// JSON holds the field it stands for too (data.field, code -32602).
	ReasonContentSentTwice = "content_sent_twice"
)

// Reasons of the daemon's resource limits.
const (
	// ReasonTooManySessions goes with CodeTooManySessions.
	ReasonTooManySessions = "too_many_sessions"
	// ReasonStoreFull: the store is at --store-max-bytes with nothing
	// left to drop but acknowledged content, so new content is refused
	// (code CodeTooLarge).
	ReasonStoreFull = "store_full"
	// ReasonBackupDropped: session.undo of a write whose backup was
	// dropped to keep the store under --store-max-bytes (code
	// CodeSessionState).
	ReasonBackupDropped = "backup_dropped"
	// ReasonTooManyFollows: trace.follow on a connection that follows
	// MaxFollowsPerConnection times already (code CodeTooLarge,
	// data.limit); a follow lasts as long as its connection.
	ReasonTooManyFollows = "too_many_follows"
)

// Reasons of checkpoints and turns.
const (
	// ReasonTurnNotFound: no turn has the turn_id (or no turn of the
	// workspace is left to undo, with last).
	ReasonTurnNotFound = "turn_not_found"
	// ReasonOperationNotFound: no undo has the operation_id (or none is
	// left to redo, with last).
	ReasonOperationNotFound = "operation_not_found"
	// ReasonCheckpointNotFound: a checkpoint the call needs was dropped by
	// retention.
	ReasonCheckpointNotFound = "checkpoint_not_found"
	// ReasonTurnOpen: undo of a turn that has not ended.
	ReasonTurnOpen = "turn_open"
	// ReasonTurnUndone: undo of a turn whose last operation is an undo
	// (redo it first), or redo of an undo already redone.
	ReasonTurnUndone = "turn_already_undone"
	// ReasonTurnUnrecorded: undo of a turn that had no checkpoints (its
	// workspace was too big to record).
	ReasonTurnUnrecorded = "turn_not_recorded"
	// ReasonWorkspaceTooBig: the workspace is over
	// --checkpoint-max-workspace-files or --checkpoint-max-workspace-bytes.
	ReasonWorkspaceTooBig = "workspace_too_big"
	// ReasonWorkspaceForbidden: the home directory itself or / named as a
	// turn's workspace.
	ReasonWorkspaceForbidden = "workspace_forbidden"
)

// MaxFollowsPerConnection bounds the trace.follow subscriptions of one
// connection: each holds a buffer of events and a goroutine until the
// connection closes.
const MaxFollowsPerConnection = 4

// ErrorData is the data object of every application error.
type ErrorData struct {
	// Reason is a stable machine-readable string, one of the Reason constants.
	Reason string `json:"reason"`
	// The fields below are set where they help the caller recover.
	SessionID   string `json:"session_id,omitempty"`
	Field       string `json:"field,omitempty"`
	ExpectedSeq uint64 `json:"expected_seq,omitempty"`
	Limit       int64  `json:"limit,omitempty"`
	Path        string `json:"path,omitempty"`
	// WorkspaceRoot is the session's workspace (resolved) that Path lies
	// outside of, with outside_workspace.
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	// Rule is the protection rule that refused Path, with protected_path.
	Rule         string   `json:"rule,omitempty"`
	AllowedRoots []string `json:"allowed_roots,omitempty"`
	Method       string   `json:"method,omitempty"`
	// Validation carries the findings of a validation_failed error, and
	// Attempt / MaxAttempts where corrected attempts count.
	Validation  *Validation `json:"validation,omitempty"`
	Edit        *EditResult `json:"edit,omitempty"`
	Attempt     int         `json:"attempt,omitempty"`
	MaxAttempts int         `json:"max_attempts,omitempty"`
	// TxID and Files name the transaction and the files of a multi-file
	// write that failed, each with its own reason.
	TxID  string      `json:"tx_id,omitempty"`
	Files []FileError `json:"files,omitempty"`
	// ExpectedSHA256 and ActualSHA256, with target_changed, are the
	// content the writer based its change on (expected_sha256, or the
	// content at begin) and the content the file has now.
	ExpectedSHA256 string `json:"expected_sha256,omitempty"`
	ActualSHA256   string `json:"actual_sha256,omitempty"`
	// Conflicts, with target_changed, are the regions both the session and
	// the other writer changed, so a merge was refused.
	Conflicts []MergeConflict `json:"conflicts,omitempty"`
	// Next is the step the daemon suggests to an agent's client (a new
	// session with supersedes, a new transaction), also the last sentence
	// of Message; a client that takes other steps (orionctl) cuts it off
	// and says its own.
	Next string `json:"next,omitempty"`
}

// Error is an application error as it travels over the wire. Both the daemon
// (to build replies) and clients (to inspect failures) use it.
type Error struct {
	Code    int64     `json:"code"`
	Message string    `json:"message"`
	Data    ErrorData `json:"data"`
}

func (e *Error) Error() string {
	if e.Data.Reason != "" {
		return fmt.Sprintf("%s (%s, code %d)", e.Message, e.Data.Reason, e.Code)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// Errorf returns an Error with the given code and reason and a formatted
// message.
func Errorf(code int64, reason, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Data: ErrorData{Reason: reason}}
}
