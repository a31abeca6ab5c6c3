package protocol

import "time"

// Methods of workspace checkpoints and turns. A checkpoint is the recorded
// state of a workspace's files at an instant; a turn is an agent's span of
// work between the checkpoint at its start and the one at its end, and
// undoing it reverts exactly what changed in between, whoever wrote it.
const (
	MethodTurnBegin        = "turn.begin"
	MethodTurnEnd          = "turn.end"
	MethodTurnList         = "turn.list"
	MethodTurnGet          = "turn.get"
	MethodTurnUndo         = "turn.undo"
	MethodTurnRedo         = "turn.redo"
	MethodCheckpointCreate = "checkpoint.create"
)

// Every turn method, typed (see Method).
var (
	TurnBegin        = Method[TurnBeginParams, TurnBeginResult]{MethodTurnBegin}
	TurnEnd          = Method[TurnEndParams, TurnInfo]{MethodTurnEnd}
	TurnList         = Method[TurnListParams, TurnListResult]{MethodTurnList}
	TurnGet          = Method[TurnGetParams, TurnInfo]{MethodTurnGet}
	TurnUndo         = Method[TurnUndoParams, TurnUndoResult]{MethodTurnUndo}
	TurnRedo         = Method[TurnRedoParams, TurnUndoResult]{MethodTurnRedo}
	CheckpointCreate = Method[CheckpointCreateParams, CheckpointInfo]{MethodCheckpointCreate}
)

// WriterOutside is a changed file's writer when no Orion session of the
// turn wrote it: an agent's own tools, a shell, an editor, the person.
const WriterOutside = "outside"

// Kinds of change a turn made to one path.
const (
	ChangeCreated  = "created"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
	ChangeRenamed  = "renamed"
	// ChangeMode: only the mode bits changed (chmod +x).
	ChangeMode = "mode"
)

// Outcomes of one file of an undo or a redo.
const (
	// UndoReverted: the file was as the turn left it; its start state is
	// back.
	UndoReverted = "reverted"
	// UndoMerged: the file changed after the turn; the turn's change was
	// taken out by a clean three-way merge, keeping the later change.
	UndoMerged = "merged"
	// UndoLeft: the later change overlaps the turn's (or the file is
	// binary): the file is left exactly as it is, Hunks say where.
	UndoLeft = "left"
	// UndoNotRestorable: the start content was never recorded (over
	// --checkpoint-max-file-bytes, or dropped by retention): the file is
	// left as it is.
	UndoNotRestorable = "not_restorable"
	// UndoUnchanged: the file is already in the state the undo would
	// write.
	UndoUnchanged = "unchanged"
)

// Recording states of a workspace, in TurnBeginResult.Recording and
// daemon.status.
const (
	// RecordingWatching: fsnotify sees every directory of the workspace.
	RecordingWatching = "watching"
	// RecordingScanning: the kernel's event queue overflowed or its watch
	// limit was reached; the next checkpoint compares every file against
	// the stat cache instead.
	RecordingScanning = "scanning"
	// RecordingTooBig: the workspace is over --checkpoint-max-workspace-files
	// or --checkpoint-max-workspace-bytes after the ignores: no checkpoint
	// is taken, never a partial one.
	RecordingTooBig = "too_big"
)

// TurnBeginParams are the params of turn.begin.
type TurnBeginParams struct {
	// WorkspaceRoot is the absolute directory the turn covers; inside the
	// allowed roots, never the home directory itself nor /.
	WorkspaceRoot string `json:"workspace_root"`
	// Agent names who works in the turn (claude, codex, a command).
	Agent string `json:"agent,omitempty"`
	Label string `json:"label,omitempty"`
}

// TurnBeginResult is the result of turn.begin. A turn already open in the
// workspace is ended first (its end checkpoint is this turn's start).
type TurnBeginResult struct {
	TurnID       string `json:"turn_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Recording is watching, scanning, or too_big (then CheckpointID is
	// empty and the turn cannot be undone; Warning says why).
	Recording string `json:"recording"`
	Warning   string `json:"warning,omitempty"`
	// Ended is the turn this one ended, if one was open.
	Ended string `json:"ended,omitempty"`
}

// TurnEndParams are the params of turn.end.
type TurnEndParams struct {
	TurnID string `json:"turn_id"`
}

// TurnListParams are the params of turn.list.
type TurnListParams struct {
	WorkspaceRoot string `json:"workspace_root"`
	// Limit bounds the turns of one page (default 20, at most 200).
	Limit int `json:"limit,omitempty"`
	// Cursor is a previous page's NextCursor.
	Cursor string `json:"cursor,omitempty"`
}

// TurnListResult is a page of turns, newest first.
type TurnListResult struct {
	Turns []TurnInfo `json:"turns"`
	// NextCursor, when set, fetches the next (older) page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// TurnGetParams are the params of turn.get.
type TurnGetParams struct {
	TurnID string `json:"turn_id"`
	// Diffs asks for each file's unified diff, start to end, each bounded
	// by MaxDiffBytes (default 64 KiB, at most 1 MiB).
	Diffs        bool `json:"diffs,omitempty"`
	MaxDiffBytes int  `json:"max_diff_bytes,omitempty"`
}

// TurnInfo describes one turn.
type TurnInfo struct {
	TurnID        string `json:"turn_id"`
	WorkspaceRoot string `json:"workspace_root"`
	Agent         string `json:"agent,omitempty"`
	Label         string `json:"label,omitempty"`
	// State is open, ended, undone (its last operation was an undo) or
	// unrecorded (too big to record).
	State           string     `json:"state"`
	StartCheckpoint string     `json:"start_checkpoint,omitempty"`
	EndCheckpoint   string     `json:"end_checkpoint,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	// Files are the paths the turn changed (empty while it is open).
	Files []TurnFile `json:"files"`
	// Sessions are the Orion sessions that belonged to the turn.
	Sessions []string `json:"sessions,omitempty"`
	Warning  string   `json:"warning,omitempty"`
}

// Turn states.
const (
	TurnOpen       = "open"
	TurnEnded      = "ended"
	TurnUndone     = "undone"
	TurnUnrecorded = "unrecorded"
)

// TurnFile is one path a turn changed.
type TurnFile struct {
	// Path is relative to the workspace, with slashes.
	Path string `json:"path"`
	// Kind is created, modified, deleted, renamed (From is the old path)
	// or mode.
	Kind string `json:"kind"`
	From string `json:"from,omitempty"`
	// BytesBefore and BytesAfter are the sizes at the start and the end
	// (-1 where the file did not exist).
	BytesBefore int64  `json:"bytes_before"`
	BytesAfter  int64  `json:"bytes_after"`
	ModeBefore  string `json:"mode_before,omitempty"`
	ModeAfter   string `json:"mode_after,omitempty"`
	// Symlink marks a symbolic link (its target is its content).
	Symlink bool `json:"symlink,omitempty"`
	// Writer is the Orion session id that wrote the file during the turn,
	// or "outside".
	Writer string `json:"writer"`
	// Restorable is false where the start content was not recorded (over
	// --checkpoint-max-file-bytes); Note says why.
	Restorable bool   `json:"restorable"`
	Note       string `json:"note,omitempty"`
	// Diff is the unified diff start to end, on request; DiffTruncated
	// when cut at the bound, Binary when no text diff is shown.
	Diff          string `json:"diff,omitempty"`
	DiffTruncated bool   `json:"diff_truncated,omitempty"`
	Binary        bool   `json:"binary,omitempty"`
}

// TurnUndoParams are the params of turn.undo: TurnID or Last.
type TurnUndoParams struct {
	TurnID string `json:"turn_id,omitempty"`
	// Last undoes the newest ended turn of WorkspaceRoot not undone yet.
	Last          bool   `json:"last,omitempty"`
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	// AllOrNothing refuses the whole undo (writing nothing) if any file
	// would be left as it is.
	AllOrNothing bool `json:"all_or_nothing,omitempty"`
	// DryRun reports each file's outcome without writing.
	DryRun bool `json:"dry_run,omitempty"`
}

// TurnRedoParams are the params of turn.redo: OperationID (an undo's) or
// Last (the newest undo of WorkspaceRoot not redone yet).
type TurnRedoParams struct {
	OperationID   string `json:"operation_id,omitempty"`
	Last          bool   `json:"last,omitempty"`
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	AllOrNothing  bool   `json:"all_or_nothing,omitempty"`
	DryRun        bool   `json:"dry_run,omitempty"`
}

// TurnUndoResult is the result of turn.undo and turn.redo.
type TurnUndoResult struct {
	// OperationID names this undo (or redo); turn.redo takes it back.
	OperationID string `json:"operation_id,omitempty"`
	TurnID      string `json:"turn_id"`
	// CheckpointID is the checkpoint taken before writing.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	DryRun       bool   `json:"dry_run,omitempty"`
	// Refused: all_or_nothing and some file would be left; nothing written.
	Refused bool             `json:"refused,omitempty"`
	Files   []UndoFileResult `json:"files"`
}

// UndoFileResult is one file's outcome of an undo or a redo.
type UndoFileResult struct {
	Path string `json:"path"`
	// Outcome is reverted, merged, left, not_restorable or unchanged.
	Outcome string `json:"outcome"`
	// Reason says why a file was left (conflict, binary, symlink, type).
	Reason string `json:"reason,omitempty"`
	// Hunks are the overlapping regions of a left file.
	Hunks []UndoHunk `json:"hunks,omitempty"`
}

// UndoHunk is one overlap between the turn's change and a later one:
// the lines of the turn's end state (Base, from line BaseStart, 1-based),
// what the file has now (Ours) and what the undo would have written
// (Theirs). Each text is bounded.
type UndoHunk struct {
	BaseStart int    `json:"base_start"`
	BaseEnd   int    `json:"base_end"`
	Base      string `json:"base"`
	Ours      string `json:"ours"`
	Theirs    string `json:"theirs"`
}

// CheckpointCreateParams are the params of checkpoint.create: a person's
// own checkpoint.
type CheckpointCreateParams struct {
	WorkspaceRoot string `json:"workspace_root"`
	Label         string `json:"label,omitempty"`
	// Pin keeps the checkpoint past --checkpoint-retention and
	// --store-max-bytes.
	Pin bool `json:"pin,omitempty"`
}

// CheckpointInfo describes one checkpoint.
type CheckpointInfo struct {
	CheckpointID  string    `json:"checkpoint_id"`
	WorkspaceRoot string    `json:"workspace_root"`
	Label         string    `json:"label,omitempty"`
	Pinned        bool      `json:"pinned,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// Files is how many files the checkpoint holds; Changed how many
	// differ from the previous one; StoredBytes the new content it added
	// to the store (compressed).
	Files       int    `json:"files"`
	Changed     int    `json:"changed"`
	StoredBytes int64  `json:"stored_bytes"`
	Recording   string `json:"recording"`
	Warning     string `json:"warning,omitempty"`
}

// CheckpointStatus is the checkpoints' part of daemon.status.
type CheckpointStatus struct {
	Workspaces []WorkspaceStatus `json:"workspaces"`
	// StoredBytes is the blob store's compressed size.
	StoredBytes int64 `json:"stored_bytes"`
	Blobs       int64 `json:"blobs"`
	// Dropped counts checkpoints dropped by retention since start.
	Dropped int64 `json:"dropped,omitempty"`
}

// WorkspaceStatus is one recorded workspace in daemon.status.
type WorkspaceStatus struct {
	WorkspaceRoot string `json:"workspace_root"`
	// Recording is watching, scanning (with Reason: overflow, watch
	// limit) or too_big.
	Recording   string `json:"recording"`
	Reason      string `json:"reason,omitempty"`
	Watches     int    `json:"watches"`
	OpenTurn    string `json:"open_turn,omitempty"`
	Checkpoints int    `json:"checkpoints"`
}

// MaxLabelBytes bounds a turn's or a checkpoint's label and agent name.
const MaxLabelBytes = 256

// Bounds of turn.list pages and turn.get diffs.
const (
	DefaultTurnListLimit = 20
	MaxTurnListLimit     = 200
	DefaultDiffBytes     = 64 << 10
	MaxDiffBytes         = 1 << 20
)

// Check reports the first field of p out of bounds, or nil.
func (p *TurnBeginParams) Check() error {
	c := checker{}
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.path("workspace_root", p.WorkspaceRoot)
	c.str("agent", p.Agent, MaxLabelBytes)
	c.str("label", p.Label, MaxLabelBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TurnEndParams) Check() error {
	c := checker{}
	c.str("turn_id", p.TurnID, MaxIDBytes)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TurnListParams) Check() error {
	c := checker{}
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.path("workspace_root", p.WorkspaceRoot)
	c.str("cursor", p.Cursor, MaxIDBytes)
	c.nonNegative("limit", int64(p.Limit))
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TurnGetParams) Check() error {
	c := checker{}
	c.str("turn_id", p.TurnID, MaxIDBytes)
	c.nonNegative("max_diff_bytes", int64(p.MaxDiffBytes))
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TurnUndoParams) Check() error {
	c := checker{}
	c.str("turn_id", p.TurnID, MaxIDBytes)
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.path("workspace_root", p.WorkspaceRoot)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *TurnRedoParams) Check() error {
	c := checker{}
	c.str("operation_id", p.OperationID, MaxIDBytes)
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.path("workspace_root", p.WorkspaceRoot)
	return c.result()
}

// Check reports the first field of p out of bounds, or nil.
func (p *CheckpointCreateParams) Check() error {
	c := checker{}
	c.str("workspace_root", p.WorkspaceRoot, MaxPathBytes)
	c.path("workspace_root", p.WorkspaceRoot)
	c.str("label", p.Label, MaxLabelBytes)
	return c.result()
}
