package protocol

// Stage is where a session stands in its lifecycle.
type Stage string

// Session stages. A session moves awaiting_content -> streaming ->
// finalizing -> completed, or ends aborted; the others below are the ways
// it ends short of completed and what may follow.
const (
	StageAwaitingContent Stage = "awaiting_content"
	StageStreaming       Stage = "streaming"
	StageFinalizing      Stage = "finalizing"
	StageCompleted       Stage = "completed"
	StageAborted         Stage = "aborted"
	// StageTruncated: the session ended without its end marker; its content
	// is kept whole in the store and can be continued.
	StageTruncated Stage = "truncated"
	// StageNeedsCorrections: validation refused the content; it is kept with
	// the errors for a corrected attempt.
	StageNeedsCorrections Stage = "needs_corrections"
	// StageExpired: abandoned longer than the retention period.
	StageExpired Stage = "expired"
	// StageSuperseded: a needs_corrections session replaced by a corrected
	// attempt (a new session that named it in supersedes).
	StageSuperseded Stage = "superseded"
)

// Stages lists every session stage, in lifecycle order.
var Stages = []Stage{StageAwaitingContent, StageStreaming, StageFinalizing, StageCompleted, StageAborted,
	StageTruncated, StageNeedsCorrections, StageExpired, StageSuperseded}

// AcceptsContent reports whether a session in this stage still takes
// chunks: its end marker has not been seen and it was not finalized.
func (s Stage) AcceptsContent() bool {
	return s == StageAwaitingContent || s == StageStreaming
}

// Open reports whether a session in this stage still accepts content or a
// finalize.
func (s Stage) Open() bool {
	return s.AcceptsContent() || s == StageFinalizing
}

// Unfinished reports whether a session in this stage may still lead to a
// write: it is open, or its content is kept for a continuation or a
// corrected attempt.
func (s Stage) Unfinished() bool {
	return s.Open() || s == StageTruncated || s == StageNeedsCorrections
}

// Finished reports whether a session in this stage is over for good:
// completed, aborted or expired. Such sessions are pruned after the
// retention period.
func (s Stage) Finished() bool {
	return s == StageCompleted || s == StageAborted || s == StageExpired
}

// TxStage is where a transaction stands.
type TxStage string

// Transaction stages: open -> committing -> committed, or rolled_back (a
// commit failed part-way or a crash interrupted it; its files are as they
// were and it can be committed again), needs_corrections (the check
// refused a file; nothing was written), aborted.
const (
	TxOpen             TxStage = "open"
	TxCommitting       TxStage = "committing"
	TxCommitted        TxStage = "committed"
	TxRolledBack       TxStage = "rolled_back"
	TxNeedsCorrections TxStage = "needs_corrections"
	TxAborted          TxStage = "aborted"
)

// TxStages lists every transaction stage.
var TxStages = []TxStage{TxOpen, TxCommitting, TxCommitted, TxRolledBack, TxNeedsCorrections, TxAborted}
