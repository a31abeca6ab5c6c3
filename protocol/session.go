package protocol

import "time"

// Operation says what a session does to its target file.
type Operation string

// Operations accepted by session.begin.
const (
	// OpCreate writes a new file and fails if the target already exists.
	OpCreate Operation = "create"
	// OpOverwrite replaces the whole file, creating it if absent.
	OpOverwrite Operation = "overwrite"
	// OpAppend adds the content to the end of the file, creating it if absent.
	OpAppend Operation = "append"
)

// Operations lists the operations the daemon accepts, in documentation order.
var Operations = []Operation{OpCreate, OpOverwrite, OpAppend, OpPatch, OpEdit}

// WholeFileOperations are the operations whose streamed content is the
// file (or its end) and that need nothing besides the content: the ones a
// recovery spool entry may name, since its metadata.json has no place for a
// patch_spec. WritePlanTool_begin offers all of Operations.
var WholeFileOperations = []Operation{OpCreate, OpOverwrite, OpAppend}

// BeginParams are the params of session.begin. They mirror the arguments of
// the WritePlanTool_begin tool call, plus client-side options.
type BeginParams struct {
	// Intent is a short human description of the write, kept for listings.
	Intent string `json:"intent,omitempty"`
	// TargetFile is absolute, or relative to WorkspaceRoot.
	TargetFile string `json:"target_file"`
	// Operation is one of Operations: create, overwrite, append, patch,
	// edit.
	Operation Operation `json:"operation"`
	// WorkspaceRoot is the directory a relative TargetFile resolves against.
	// It must itself lie inside an allowed root.
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	// IdleMS is how long without a chunk before session.idle is sent
	// (default 2000); AutoFinalizeMS how long before the session ends as
	// truncated. Zero takes the daemon's defaults.
	IdleMS         int64 `json:"idle_ms,omitempty"`
	AutoFinalizeMS int64 `json:"auto_finalize_ms,omitempty"`
	// ExpectedLines and ExpectedBytes, when given, are compared with what
	// arrived; a mismatch at the marker is reported as possible truncation.
	ExpectedLines int64 `json:"expected_lines,omitempty"`
	ExpectedBytes int64 `json:"expected_bytes,omitempty"`
	// TruncationPolicy says what happens to content that ends without its
	// marker at the auto-finalize timeout; empty takes the daemon default.
	TruncationPolicy TruncationPolicy `json:"truncation_policy,omitempty"`
	// Validation overrides the daemon's validation policy for this session.
	Validation *ValidationPolicy `json:"validation,omitempty"`
	// Supersedes names a needs_corrections session this one is a corrected
	// attempt of; the attempts are counted and limited.
	Supersedes string `json:"supersedes,omitempty"`
	// AllowLegacyDone lets a last line reading DONE end the content, as in
	// the legacy protocol; DONE is otherwise ordinary content.
	AllowLegacyDone bool `json:"allow_legacy_done,omitempty"`
	// PatchSpec says where operation patch puts the streamed text.
	PatchSpec PatchSpec `json:"patch_spec,omitempty"`
	// MustExist refuses the session unless the target exists.
	MustExist bool `json:"must_exist,omitempty"`
	// BackupRequired (default true) refuses to replace content unless a
	// backup of it was kept for session.undo; false skips the backup.
	BackupRequired *bool `json:"backup_required,omitempty"`
	// Agent names the agent the caller writes for, when the caller is a
	// proxy or a host in front of it (orionctl's proxy sends "codex",
	// "gemini", "claude"): listings show it after the process's own name,
	// as "orionctl (codex)". It is the caller's word, for display only.
	Agent string `json:"agent,omitempty"`
	// ExpectedSHA256 is the sha256 (lowercase hex) of the target's content
	// the writer based its change on, as a read or an earlier write
	// returned it; the empty file's hash for an empty file, and
	// AbsentSHA256 for a file that must not exist. When the target's
	// content differs, the session is refused target_changed before
	// anything is written, naming both hashes. Content only: a changed
	// time or a rewrite with the same bytes is no change.
	ExpectedSHA256 string `json:"expected_sha256,omitempty"`
	// Client is set by the daemon, never read from the wire: the name of
	// the process that opened the session (from the socket's peer
	// credentials), for listings.
	Client string `json:"-"`
}

// TruncationPolicy is what the daemon does with content that never received
// its end marker.
type TruncationPolicy string

// Truncation policies. Under every one the content also stays in the store,
// whole and continuable.
const (
	// TruncationKeep writes nothing.
	TruncationKeep TruncationPolicy = "keep"
	// TruncationIncompleteFile writes the content to a <target>.incomplete
	// sibling, never over the target.
	TruncationIncompleteFile TruncationPolicy = "incomplete_file"
	// TruncationWriteWithNote writes the content over the target followed by
	// a line saying it was cut off.
	TruncationWriteWithNote TruncationPolicy = "write_with_note"
)

// Warning is something a finalize noticed that did not stop the write.
type Warning struct {
	// Code is stable, e.g. "possible_truncation".
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BeginResult is the result of session.begin.
type BeginResult struct {
	SessionID string `json:"session_id"`
	Stage     Stage  `json:"stage"`
	// EndMarker is the line the content must end with, on a line of its own.
	EndMarker string `json:"end_marker"`
	// Instructions is the text to give the model as the tool result.
	Instructions string `json:"instructions"`
	// TargetFile is the resolved absolute path that finalize will write.
	TargetFile string    `json:"target_file"`
	Operation  Operation `json:"operation"`
	// SHA256 is the target's content at begin (lowercase hex), what a
	// merge at finalize takes as its base; empty when the file is absent.
	SHA256 string `json:"sha256,omitempty"`
}

// AbsentSHA256 is what expected_sha256 says for a target that must not
// exist: no content hashes to it.
const AbsentSHA256 = "absent"

// AppendParams are the params of session.append.
type AppendParams struct {
	SessionID string `json:"session_id"`
	// Seq is 1 for a session's first chunk and one more for each next chunk.
	Seq uint64 `json:"seq"`
	// Chunk is the next piece of content. Clients split on UTF-8 character
	// boundaries.
	Chunk string `json:"chunk"`
}

// AppendResult is the result of session.append. It is sent only after the
// chunk has been committed to the journal.
type AppendResult struct {
	SessionID string `json:"session_id"`
	Seq       uint64 `json:"seq"`
	// Duplicate is true when this seq had already been acknowledged with the
	// same bytes; nothing was stored twice.
	Duplicate bool  `json:"duplicate,omitempty"`
	Stage     Stage `json:"stage"`
	// Bytes and Lines count the content received so far, excluding the end
	// marker line and anything after it.
	Bytes int64 `json:"bytes"`
	Lines int64 `json:"lines"`
	// EndMarkerSeen is true once the end marker stands on a line of its own.
	// A marker at the very end of the input, not yet followed by a newline,
	// counts as seen; more text on that line would revoke it.
	EndMarkerSeen bool `json:"end_marker_seen"`
	// TrailingBytes counts bytes received after the end marker line; they are
	// never written.
	TrailingBytes int64 `json:"trailing_bytes,omitempty"`
}

// FinalizeParams are the params of session.finalize.
type FinalizeParams struct {
	SessionID string `json:"session_id"`
	// EndOfInput says the client reached the end of its input (a file or
	// stdin, not a model stream), so the content is complete without an end
	// marker.
	EndOfInput bool `json:"end_of_input,omitempty"`
	// Force writes even though the target changed since the session began.
	Force bool `json:"force,omitempty"`
	// DryRun repairs and validates the content and returns the unified diff
	// against the current file, and writes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// FinalizeResult is the result of session.finalize: a summary, never the
// content.
type FinalizeResult struct {
	SessionID  string    `json:"session_id"`
	Stage      Stage     `json:"stage"`
	TargetFile string    `json:"target_file"`
	Operation  Operation `json:"operation"`
	// Bytes, Lines and SHA256 describe the content this session wrote.
	Bytes  int64  `json:"bytes"`
	Lines  int64  `json:"lines"`
	SHA256 string `json:"sha256"`
	// FileBytes and FileSHA256 describe the whole file after the write; they
	// differ from Bytes and SHA256 only for append.
	FileBytes  int64  `json:"file_bytes"`
	FileSHA256 string `json:"file_sha256"`
	// EndMarkerSeen is false when the session was finalized on end_of_input.
	EndMarkerSeen bool `json:"end_marker_seen"`
	// TrailingBytes and TrailingPreview report text after the end marker,
	// which was not written.
	TrailingBytes   int64  `json:"trailing_bytes,omitempty"`
	TrailingPreview string `json:"trailing_preview,omitempty"`
	// Mode is the file mode of the written file, in octal.
	Mode string `json:"mode"`
	// ContinuedSessions lists the truncated sessions whose content this
	// session's write included, oldest first.
	ContinuedSessions []string `json:"continued_sessions,omitempty"`
	// CreatedDirs are the directories that did not exist and were made for
	// the file(s), outermost first; an undo removes them again when empty.
	CreatedDirs []string  `json:"created_dirs,omitempty"`
	Warnings    []Warning `json:"warnings,omitempty"`
	// Edit reports, per block or hunk, what a patch or edit did.
	Edit *EditResult `json:"edit,omitempty"`
	// BackupID names the backup of the replaced content kept in the store
	// for session.undo; empty when nothing was replaced.
	BackupID string `json:"backup_id,omitempty"`
	// Repairs lists what was changed before the check; Validation what the
	// check found.
	Repairs    []Repair    `json:"repairs,omitempty"`
	Validation *Validation `json:"validation,omitempty"`
	// ElisionsMerged counts the left-out regions ("// ... existing code
	// ...") of a whole-file write, or of an edit's blocks (a REPLACE
	// placeholder, Aider's "..." lines), that were filled from the file,
	// each placed by the unchanged lines around it.
	ElisionsMerged int `json:"elisions_merged,omitempty"`
	// Attempt counts corrected attempts: 1 for a first write.
	Attempt int `json:"attempt,omitempty"`
	// NothingWritten is true when the session's edit was already applied:
	// the file already held the result, so it was left untouched, and
	// there is nothing to undo.
	NothingWritten bool `json:"nothing_written,omitempty"`
	// DryRun results carry the diff and change nothing.
	DryRun bool   `json:"dry_run,omitempty"`
	Diff   string `json:"diff,omitempty"`
	// TxID names the transaction the session was committed in.
	TxID string `json:"tx_id,omitempty"`
	// Merged is true when the target changed on disk after the session
	// began and the session's change was merged with that change rather
	// than written over it: an edit applied again to the current content,
	// or a whole-file write merged three-way. MergedHunks are the other
	// writer's changes that the file kept.
	Merged      bool        `json:"merged,omitempty"`
	MergedHunks []MergeHunk `json:"merged_hunks,omitempty"`
	// Files lists every file a multi-file edit changed.
	Files []FileChange `json:"files,omitempty"`
}

// SessionIDParams are the params of methods that name one session.
type SessionIDParams struct {
	SessionID string `json:"session_id"`
}

// ListParams are the params of session.list.
type ListParams struct {
	// All includes completed and aborted sessions; by default only open
	// sessions are listed.
	All bool `json:"all,omitempty"`
	// Limit is the most sessions in one reply (0: DefaultListLimit; at
	// most MaxListLimit). A reply also ends early at MaxListReplyBytes.
	Limit int `json:"limit,omitempty"`
	// Cursor continues a listing where the reply that gave it as
	// NextCursor stopped. It is opaque.
	Cursor string `json:"cursor,omitempty"`
}

// Pagination of session.list: every reply is bounded, by count and by
// size, whatever the number of sessions.
const (
	DefaultListLimit = 500
	MaxListLimit     = 5000
	// MaxListReplyBytes bounds the sessions of one reply as encoded; a
	// session's strings are bounded (MaxIntentBytes, MaxPathBytes...), so
	// one always fits.
	MaxListReplyBytes = 4 << 20
)

// SessionInfo describes one session, as returned by session.get and
// session.list.
type SessionInfo struct {
	SessionID  string `json:"session_id"`
	Intent     string `json:"intent,omitempty"`
	TargetFile string `json:"target_file"`
	// Client is the name of the process that opened the session, from the
	// socket's peer credentials (Linux); empty when unknown.
	Client string `json:"client,omitempty"`
	// WorkspaceRoot is the workspace the session was begun in, if any.
	WorkspaceRoot string    `json:"workspace_root,omitempty"`
	Operation     Operation `json:"operation"`
	Stage         Stage     `json:"stage"`
	EndMarker     string    `json:"end_marker"`
	LastSeq       uint64    `json:"last_seq"`
	Bytes         int64     `json:"bytes"`
	Lines         int64     `json:"lines"`
	EndMarkerSeen bool      `json:"end_marker_seen"`
	TrailingBytes int64     `json:"trailing_bytes,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// Result is set once the session completed.
	Result *FinalizeResult `json:"result,omitempty"`
	// Truncation is set once the session ended truncated.
	Truncation *TruncationContext `json:"truncation,omitempty"`
	// Conflict names the external change seen on the target, if any.
	Conflict         string `json:"conflict,omitempty"`
	ContinuesSession string `json:"continues_session,omitempty"`
	ContinuedBy      string `json:"continued_by,omitempty"`
	// Validation is set while the session needs corrections.
	Validation   *Validation `json:"validation,omitempty"`
	Attempt      int         `json:"attempt,omitempty"`
	Supersedes   string      `json:"supersedes,omitempty"`
	SupersededBy string      `json:"superseded_by,omitempty"`
	// Undone is set once session.undo restored what the session replaced.
	Undone bool `json:"undone,omitempty"`
	// DryRun is set on an aborted session whose content was checked by a
	// dry-run finalize (or tx.commit) before it was aborted: nothing was
	// meant to be written.
	DryRun bool `json:"dry_run,omitempty"`
	// TxID names the transaction the session belongs to.
	TxID string `json:"tx_id,omitempty"`
	// TurnID names the turn that was open in the session's workspace when
	// it began (turn.begin), if any.
	TurnID string `json:"turn_id,omitempty"`
}

// ListResult is the result of session.list.
type ListResult struct {
	Sessions []SessionInfo `json:"sessions"`
	// NextCursor, when set, is the cursor of the next page: more sessions
	// follow. Empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// AbortResult is the result of session.abort.
type AbortResult struct {
	SessionID string `json:"session_id"`
	Stage     Stage  `json:"stage"`
}

// AllowRootParams are the params of daemon.allow_root.
type AllowRootParams struct {
	// Path is the directory to allow: absolute, existing.
	Path string `json:"path"`
}

// AllowRootResult is the result of daemon.allow_root.
type AllowRootResult struct {
	// Path is the directory as the daemon resolved it (symlinks followed).
	Path string `json:"path"`
	// Added is false when an allowed root held Path already; nothing
	// changed then.
	Added bool `json:"added"`
	// AllowedRoots are the roots in force now.
	AllowedRoots []string `json:"allowed_roots"`
	// SavedIn is the file that keeps the roots added while running, read
	// at every start.
	SavedIn string `json:"saved_in,omitempty"`
}

// StatusResult is the result of daemon.status.
type StatusResult struct {
	Version         string    `json:"version"`
	ProtocolVersion int       `json:"protocol_version"`
	PID             int       `json:"pid"`
	Socket          string    `json:"socket"`
	StateDir        string    `json:"state_dir"`
	AllowedRoots    []string  `json:"allowed_roots"`
	StartedAt       time.Time `json:"started_at"`
	OpenSessions    int       `json:"open_sessions"`
	MaxChunkBytes   int64     `json:"max_chunk_bytes"`
	MaxSessionBytes int64     `json:"max_session_bytes"`
	// MaxMessageBytes is the largest frame read (Content-Length), derived
	// from MaxChunkBytes; MaxInflight how many requests of one connection
	// may await their reply before the daemon stops reading it.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	MaxInflight     int   `json:"max_inflight,omitempty"`
	// MaxConnections is how many clients are served at once, and
	// Connections how many are connected now. FDLimit is the daemon's soft
	// RLIMIT_NOFILE, which MaxConnections must stay well under.
	MaxConnections int    `json:"max_connections,omitempty"`
	Connections    int    `json:"connections"`
	FDLimit        uint64 `json:"fd_limit,omitempty"`
	// MaxClientConnections is one client process's share of
	// MaxConnections; MaxSessions and MaxClientSessions cap the
	// unfinished sessions of the daemon and of one client process.
	MaxClientConnections int `json:"max_client_connections,omitempty"`
	MaxSessions          int `json:"max_sessions,omitempty"`
	MaxClientSessions    int `json:"max_client_sessions,omitempty"`
	// StoreMaxBytes is the store's cap (0: none); Store describes its
	// size and what the cap dropped.
	StoreMaxBytes int64       `json:"store_max_bytes,omitempty"`
	Store         *StoreStats `json:"store,omitempty"`
	Methods       []string    `json:"methods"`
	// Features are what the daemon does beyond its methods:
	// FeatureRawContent when it reads a request's content raw.
	Features []string `json:"features,omitempty"`
	// ProtectedPaths are refused whatever the allowed roots say: the
	// daemon's own files always, the rest unless lifted with
	// --allow-protected (AllowedProtected). An entry without a slash is a
	// name matching any path component (".git").
	ProtectedPaths   []string `json:"protected_paths"`
	AllowedProtected []string `json:"allowed_protected,omitempty"`
	// ProtectedRules are the rules behind ProtectedPaths, shapes included
	// (hidden entries of home, git directories by their content), in the
	// order they are checked; a protected_path refusal names one in
	// data.rule.
	ProtectedRules []ProtectedRule `json:"protected_rules,omitempty"`
	// Trace describes the trace store (retention, size and its cap, what
	// was dropped); absent when tracing is off.
	Trace *TraceStats `json:"trace,omitempty"`
	// Checkpoints describes the recorded workspaces (watching or
	// scanning, and why) and the blob store.
	Checkpoints *CheckpointStatus `json:"checkpoints,omitempty"`
}

// StoreStats describes the store in daemon.status.
type StoreStats struct {
	// Bytes is the live data in the store file (its pages in use);
	// FileBytes the file's size, which never shrinks (freed pages are
	// reused).
	Bytes     int64 `json:"bytes"`
	FileBytes int64 `json:"file_bytes"`
	// BackupsDropped counts undo backups dropped to keep under
	// StoreMaxBytes since the daemon started, BackupBytesDropped their size.
	BackupsDropped     int64 `json:"backups_dropped,omitempty"`
	BackupBytesDropped int64 `json:"backup_bytes_dropped,omitempty"`
}

// ProtectedRule is one rule of the daemon's protected paths.
type ProtectedRule struct {
	// Rule is the rule's stable name ("home-hidden", "git-dir", ...).
	Rule string `json:"rule"`
	// Pattern is what it protects: paths (and what is below them), names
	// matched against any path component, or a shape in words.
	Pattern []string `json:"pattern"`
	// Why is the reason for the rule.
	Why string `json:"why"`
}

// MergeHunk is one change the other writer made to a file, relative to
// the content the merge started from (the content at begin, for a
// finalize; what the session wrote, for an undo).
type MergeHunk struct {
	// StartLine and EndLine (1-based, inclusive) are the lines of that
	// content the change replaced; for an insertion EndLine is
	// StartLine-1 (the change goes before StartLine).
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// Old and New are the text before and after, each cut to
	// MaxMergeTextBytes (Truncated says so).
	Old       string `json:"old"`
	New       string `json:"new"`
	Truncated bool   `json:"truncated,omitempty"`
}

// MergeConflict is a region of a file that the session and the other
// writer both changed, differently: the merge refused, and nothing was
// written.
type MergeConflict struct {
	// StartLine and EndLine are the region in the base, as in MergeHunk.
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// Base is the region as it was (at begin for a finalize, as the
	// session wrote it for an undo); File as the file has it now; Session
	// as the session would write it (for an undo, as the undo would put it
	// back). Each is cut to MaxMergeTextBytes.
	Base      string `json:"base"`
	File      string `json:"file"`
	Session   string `json:"session"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Bounds on the merge reports of a result or an error.
const (
	// MaxMergeTextBytes bounds each text of a MergeHunk or MergeConflict.
	MaxMergeTextBytes = 4 << 10
	// MaxMergeReports bounds the hunks or conflicts listed; the rest are
	// counted in the message.
	MaxMergeReports = 50
)
