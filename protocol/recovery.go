package protocol

// Notifications of idle handling, truncation, completion and conflicts.
const (
	// NotifySessionIdle is sent to a session's client when no chunk arrived
	// for the session's idle period.
	NotifySessionIdle = "session.idle"
	// NotifySessionTruncated is sent when a session ends without its marker
	// after the auto-finalize timeout.
	NotifySessionTruncated = "session.truncated"
	// NotifySessionFinalized is sent when a session completes.
	NotifySessionFinalized = "session.finalized"
	// NotifySessionConflict is sent when the target changed on disk while
	// the session was open.
	NotifySessionConflict = "session.conflict"
)

// ResumeResult tells a client where a session stands after a crash or a
// disconnect, so it continues without loss or duplication.
type ResumeResult struct {
	SessionID     string    `json:"session_id"`
	Stage         Stage     `json:"stage"`
	TargetFile    string    `json:"target_file"`
	Operation     Operation `json:"operation"`
	EndMarker     string    `json:"end_marker"`
	LastSeq       uint64    `json:"last_seq"`
	NextSeq       uint64    `json:"next_seq"`
	Bytes         int64     `json:"bytes"`
	Lines         int64     `json:"lines"`
	EndMarkerSeen bool      `json:"end_marker_seen"`
	// Tail is the last lines of the content received, for a model to pick
	// up where it stopped.
	Tail string `json:"tail"`
	// ContinuePrompt is the sentence to give the model to continue.
	ContinuePrompt string `json:"continue_prompt"`
}

// IdleNotification is the params of session.idle.
type IdleNotification struct {
	SessionID string `json:"session_id"`
	IdleMS    int64  `json:"idle_ms"`
	EndMarker string `json:"end_marker"`
	// Prompt is the text to give the model.
	Prompt string `json:"prompt"`
}

// TruncationContext is what a client needs to make the model continue a
// session that ended without its marker.
type TruncationContext struct {
	SessionID  string `json:"session_id"`
	TargetFile string `json:"target_file"`
	Lines      int64  `json:"lines"`
	Bytes      int64  `json:"bytes"`
	Tail       string `json:"tail"`
	// ContinuePrompt is the exact sentence for the model, e.g. "Continue
	// writing src/app.go from line 120 ...".
	ContinuePrompt string `json:"continue_prompt"`
	// IncompleteFile is set when the policy wrote the content to a
	// <target>.incomplete sibling.
	IncompleteFile string `json:"incomplete_file,omitempty"`
}

// ContinueParams are the params of session.continue: open a session chained
// to one that ended truncated.
type ContinueParams struct {
	SessionID string `json:"session_id"`
}

// ConflictNotification is the params of session.conflict.
type ConflictNotification struct {
	SessionID  string `json:"session_id"`
	TargetFile string `json:"target_file"`
	// Event is "write", "rename", "remove" or "hash_changed".
	Event string `json:"event"`
}

// CleanParams are the params of session.clean. Zero durations take the
// daemon's retention periods.
type CleanParams struct {
	// OlderThanMS expires unfinished sessions untouched for this long.
	OlderThanMS int64 `json:"older_than_ms,omitempty"`
	// FinishedOlderThanMS prunes finished sessions older than this.
	FinishedOlderThanMS int64 `json:"finished_older_than_ms,omitempty"`
}

// CleanResult says what a sweep did.
type CleanResult struct {
	// Expired sessions were unfinished and abandoned: their content is
	// dropped, their record kept for the summary retention.
	Expired []string `json:"expired"`
	// Pruned sessions were finished long enough ago to forget entirely.
	Pruned []string `json:"pruned"`
}

// UndoResult is the result of session.undo.
type UndoResult struct {
	SessionID  string `json:"session_id"`
	TargetFile string `json:"target_file"`
	// Removed is true when the session had created the file, so undoing it
	// deleted the file; otherwise RestoredBytes were put back.
	Removed       bool   `json:"removed,omitempty"`
	RestoredBytes int64  `json:"restored_bytes"`
	SHA256        string `json:"sha256,omitempty"`
	// RemovedDirs are the directories the session had made for its files
	// and that the undo left empty, so it removed them too.
	RemovedDirs []string `json:"removed_dirs,omitempty"`
	// TxID is set when the session belonged to a transaction: the whole
	// transaction was undone, all or none, and Files lists each of its
	// files (the named session's included, whose file the fields above
	// describe).
	TxID  string       `json:"tx_id,omitempty"`
	Files []UndoResult `json:"files,omitempty"`
	// Merged is true when the file changed after the session wrote it and
	// the undo reverted only the session's change, keeping the later one;
	// MergedHunks are the later changes kept.
	Merged      bool        `json:"merged,omitempty"`
	MergedHunks []MergeHunk `json:"merged_hunks,omitempty"`
	// Unchanged is true when the file was already as the undo would leave
	// it, so nothing was written to it: the file the session created was
	// deleted since, or the file it deleted was put back since with the
	// content it had.
	Unchanged bool `json:"unchanged,omitempty"`
}
