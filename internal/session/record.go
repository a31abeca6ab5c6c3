package session

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/protocol"
)

// record is a session as journaled in the store, next to its chunks. It
// goes with a chunk at every stage change and every recordEvery appends
// (recordDue); what the appends in between change (the last seq and the
// scanner's counts) follows from their chunks, which are journaled before
// they are acknowledged, so after a crash the record read back and then
// caught up with those chunks (Manager.catchUp) agrees with every chunk
// that was acknowledged.
type record struct {
	// published is where the entry holding this record keeps what
	// listings show; copies of the record share it.
	published *atomic.Pointer[protocol.SessionInfo]
	// inline is the content of a session.write not yet journaled: the
	// first journaling of the record stores it as chunk 1 in the same
	// commit (see Manager.Write), and clears it.
	inline []byte
	// unjournaled is true for a begun session whose record the store does
	// not hold yet: begin replies without a sync, and the session's first
	// write to the store (its first chunk, as a rule) carries the record,
	// and pendingBase, the target's content at begin kept for a merge. A
	// begun session is durable exactly when its first acknowledged
	// content is; before that a crash may lose it, and the client's next
	// request is told the session is not found.
	unjournaled bool
	pendingBase *heldBase
	// charset is the encoding the target's project names, looked up by
	// the check that applies the session's edit, so that an edit applied
	// again (to the content at begin, for a merge) decodes the file the
	// same way.
	charset edit.Charset
	// files is the confined layer as the request working on the record
	// sees it (confine.FS.Scoped), while one is: its steps then look for
	// repositories above the target, and open its directory, once.
	files *confine.FS
	// base is the target as a session.write's begin read it, for the rest
	// of that request (see baseRead); nil otherwise.
	base *baseRead
	// early is a session.write's file, being written from its content as
	// sent while the request checks it (see stageSpeculative); nil
	// otherwise, and once a finalize took it or let it go.
	early *early
	// atBegin is the target's content as begin read and hashed it, for
	// keepBase, which takes it; nil when begin did not keep it.
	atBegin []byte
	// recordedSeq and recordedBytes are LastSeq and Scanner.Total as the
	// journaled record last said (see recordDue).
	recordedSeq   uint64
	recordedBytes int64
	// sum is the content's hash as it was appended (see contentSum), nil
	// where it is not known.
	sum *contentSum

	ID            string `json:"id"`
	Intent        string `json:"intent,omitempty"`
	RequestedPath string `json:"requested_path"`
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	// Workspace is WorkspaceRoot resolved at begin: every file the session
	// writes must lie inside it, at begin and at the moment of the write.
	Workspace string             `json:"workspace,omitempty"`
	Target    string             `json:"target"`
	Operation protocol.Operation `json:"operation"`
	Stage     protocol.Stage     `json:"stage"`
	LastSeq   uint64             `json:"last_seq"`
	Scanner   Scanner            `json:"scanner"`
	// BaseExists, BaseSize and BaseSHA256 describe the target when the
	// session began: finalize compares them to catch external changes, and
	// recovery uses them to tell whether an interrupted write landed.
	BaseExists bool   `json:"base_exists"`
	BaseSize   int64  `json:"base_size,omitempty"`
	BaseSHA256 string `json:"base_sha256,omitempty"`
	// BaseKey and BasePieces are the backup of the target's content at
	// begin, the base of a three-way merge when someone else changed the
	// target before finalize (see merge.go); BaseKey is the session's
	// own, or the session it continues. AfterPieces are the backup of
	// what the finalize wrote, under afterKey, the base of a three-way
	// undo. Each is zero where the file was too large or not kept.
	BaseKey     string `json:"base_key,omitempty"`
	BasePieces  uint64 `json:"base_pieces,omitempty"`
	AfterPieces uint64 `json:"after_pieces,omitempty"`

	IdleMS           int64                     `json:"idle_ms,omitempty"`
	AutoFinalizeMS   int64                     `json:"auto_finalize_ms,omitempty"`
	ExpectedLines    int64                     `json:"expected_lines,omitempty"`
	ExpectedBytes    int64                     `json:"expected_bytes,omitempty"`
	TruncationPolicy protocol.TruncationPolicy `json:"truncation_policy,omitempty"`

	// Chain holds the truncated sessions this one continues, oldest first;
	// their content precedes this session's in the written file.
	Chain            []link `json:"chain,omitempty"`
	ContinuesSession string `json:"continues_session,omitempty"`
	ContinuedBy      string `json:"continued_by,omitempty"`

	Validation      *protocol.ValidationPolicy `json:"validation,omitempty"`
	AllowLegacyDone bool                       `json:"allow_legacy_done,omitempty"`
	// Attempt numbers corrected attempts (0 and 1 both mean the first);
	// Supersedes and SupersededBy link the attempts.
	Attempt        int                  `json:"attempt,omitempty"`
	Supersedes     string               `json:"supersedes,omitempty"`
	SupersededBy   string               `json:"superseded_by,omitempty"`
	LastValidation *protocol.Validation `json:"last_validation,omitempty"`

	// PatchSpec is the patch_spec of a patch session; SkipBackup is set
	// when the session said backup_required: false.
	PatchSpec  json.RawMessage `json:"patch_spec,omitempty"`
	SkipBackup bool            `json:"skip_backup,omitempty"`
	// Client names the process that opened the session, for listings.
	Client string `json:"client,omitempty"`

	// BackupPieces counts the pieces of the replaced content kept for
	// undo (0: the session replaced nothing); Undone is set once restored.
	BackupPieces uint64 `json:"backup_pieces,omitempty"`
	Undone       bool   `json:"undone,omitempty"`
	// BackupDropped says when and why the store's cap dropped the
	// backups (BackupPieces and Changes'), which undo then reports.
	BackupDropped string `json:"backup_dropped,omitempty"`
	// DryRun is set by a dry-run finalize of the session: an abort after
	// it journals it, and a listing then tells that session from one
	// aborted for a failure. (Set in memory only until that journaling.)
	DryRun bool `json:"dry_run,omitempty"`

	// Whole is set on a session.write's session: its one chunk is all of
	// its content, as finalize's end_of_input says of other sessions.
	Whole bool `json:"whole,omitempty"`

	// PendingSHA256 is the sha256 the target will have once a finalize of
	// repaired content lands; recovery compares it after a crash.
	PendingSHA256 string `json:"pending_sha256,omitempty"`

	// Imported is set once a spool import has journaled all its content; a
	// session from an import a crash cut short lacks it and is redone.
	Imported bool `json:"imported,omitempty"`

	// TxID names the tx.begin transaction the session belongs to; such a
	// session is written only by tx.commit. Changes are the files a
	// multi-file edit changed, with their backups, for undo.
	TxID string `json:"tx_id,omitempty"`
	// TurnID is the turn open in the target's workspace at begin.
	TurnID  string       `json:"turn_id,omitempty"`
	Changes []fileChange `json:"changes,omitempty"`

	Conflict string `json:"conflict,omitempty"`
	// FinalizeInterrupted is set when recovery reopened the session after a
	// crash in its finalize that may have written the file (no temp file
	// proved otherwise): whether the client was told it was written is
	// unknown, so the daemon does not finalize it again by itself (no
	// auto-finalize); a client's finalize does.
	FinalizeInterrupted bool                        `json:"finalize_interrupted,omitempty"`
	Truncation          *protocol.TruncationContext `json:"truncation,omitempty"`
	CreatedAt           time.Time                   `json:"created_at"`
	UpdatedAt           time.Time                   `json:"updated_at"`
	Result              *protocol.FinalizeResult    `json:"result,omitempty"`
}

// An append journals the session record with its chunk only every
// recordEvery appends or recordEveryBytes bytes, or when something other
// than the counts changes: encoding and storing it with each chunk cost
// more than the chunk's index entry. What an append changes (the last seq
// and the scanner's counts) follows from the chunks, which recovery reads
// back from the last record on (Manager.catchUp); these bound that read.
const (
	recordEvery      = 64
	recordEveryBytes = 4 << 20
)

// recordDue reports whether r, which an append made from prev, must be
// journaled with that append's chunk: its first chunk or a stage change,
// the end marker seen, or enough appended since the record last went.
func (r *record) recordDue(prev *record) bool {
	return prev.Stage != r.Stage || prev.LastSeq == 0 || prev.recordedSeq == 0 ||
		prev.Scanner.MarkerSeen() != r.Scanner.MarkerSeen() ||
		r.LastSeq-prev.recordedSeq >= recordEvery || r.Scanner.Total-prev.recordedBytes >= recordEveryBytes
}

// link is one earlier session's share of a chained write.
type link struct {
	ID       string `json:"id"`
	Bytes    int64  `json:"bytes"`
	Newlines int64  `json:"newlines"`
	// Unterminated is true when that content ends inside a line.
	Unterminated bool `json:"unterminated,omitempty"`
}

func (r *record) marshal() ([]byte, error) { return json.Marshal(r) }

// segments lists the pieces of the content to write, in order: every
// chained session's content, then this session's own.
func (r *record) segments() []link {
	return append(append([]link(nil), r.Chain...), r.own())
}

// own is this session's own share of the content.
func (r *record) own() link {
	return link{ID: r.ID, Bytes: r.Scanner.ContentLen(), Newlines: r.Scanner.Newlines,
		Unterminated: !r.Scanner.MarkerSeen() && r.Scanner.LinePending}
}

// contentBytes and contentLines describe the whole (chained) content.
// They run for every append's reply, so they walk the chain without
// building segments.
func (r *record) contentBytes() int64 {
	n := r.own().Bytes
	for _, s := range r.Chain {
		n += s.Bytes
	}
	return n
}

func (r *record) contentLines() int64 {
	var lines int64
	unterminated := false
	count := func(s link) {
		lines += s.Newlines
		if s.Bytes > 0 {
			// Only the last non-empty piece decides whether the whole
			// content ends inside a line.
			unterminated = s.Unterminated
		}
	}
	for _, s := range r.Chain {
		count(s)
	}
	count(r.own())
	if unterminated {
		lines++
	}
	return lines
}

// acceptsContent reports whether the session still accepts chunks.
func (r *record) acceptsContent() bool { return r.Stage.AcceptsContent() }

func (r *record) info() protocol.SessionInfo {
	return protocol.SessionInfo{
		SessionID:        r.ID,
		Intent:           r.Intent,
		TargetFile:       r.Target,
		WorkspaceRoot:    r.Workspace,
		Client:           r.Client,
		Operation:        r.Operation,
		Stage:            r.Stage,
		EndMarker:        r.Scanner.Marker,
		LastSeq:          r.LastSeq,
		Bytes:            r.contentBytes(),
		Lines:            r.contentLines(),
		EndMarkerSeen:    r.Scanner.MarkerSeen(),
		TrailingBytes:    r.Scanner.TrailingLen(),
		CreatedAt:        r.CreatedAt,
		UpdatedAt:        r.UpdatedAt,
		Result:           r.Result,
		Truncation:       r.Truncation,
		Conflict:         r.Conflict,
		ContinuesSession: r.ContinuesSession,
		ContinuedBy:      r.ContinuedBy,
		Validation:       r.LastValidation,
		Attempt:          r.attempt(),
		Supersedes:       r.Supersedes,
		SupersededBy:     r.SupersededBy,
		Undone:           r.Undone,
		DryRun:           r.DryRun && r.Stage == protocol.StageAborted,
		TxID:             r.TxID,
		TurnID:           r.TurnID,
	}
}
