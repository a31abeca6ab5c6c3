package protocol

import "time"

// TxBeginParams are the params of tx.begin: one session is opened per file.
type TxBeginParams struct {
	Intent string `json:"intent,omitempty"`
	// WorkspaceRoot is the default for files that give none.
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	// Files are the files and their operations, each as session.begin
	// takes them. Two files may not name the same target.
	Files []BeginParams `json:"files"`
}

// TxBeginResult is the result of tx.begin: the sessions to stream each
// file's content into, in the order of the files.
type TxBeginResult struct {
	TxID     string        `json:"tx_id"`
	Stage    TxStage       `json:"stage"`
	Sessions []BeginResult `json:"sessions"`
}

// TxCommitParams are the params of tx.commit.
type TxCommitParams struct {
	TxID string `json:"tx_id"`
	// EndOfInput, Force and DryRun mean what they mean for
	// session.finalize, for every file of the transaction.
	EndOfInput bool `json:"end_of_input,omitempty"`
	Force      bool `json:"force,omitempty"`
	DryRun     bool `json:"dry_run,omitempty"`
}

// TxCommitResult is the result of tx.commit: one summary per file, in the
// order of the files. A dry run carries each file's diff and writes nothing.
type TxCommitResult struct {
	TxID   string           `json:"tx_id"`
	Stage  TxStage          `json:"stage"`
	Files  []FinalizeResult `json:"files"`
	DryRun bool             `json:"dry_run,omitempty"`
}

// TxIDParams are the params of tx.abort and tx.get.
type TxIDParams struct {
	TxID string `json:"tx_id"`
}

// TxInfo describes a transaction, as tx.get and tx.abort return it.
type TxInfo struct {
	TxID      string    `json:"tx_id"`
	Intent    string    `json:"intent,omitempty"`
	Stage     TxStage   `json:"stage"`
	Sessions  []string  `json:"sessions"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Error says why the last commit failed, when it did.
	Error string `json:"error,omitempty"`
	// Files are the per-file summaries once committed.
	Files []FinalizeResult `json:"files,omitempty"`
}

// FileError is what went wrong with one file of a transaction or of a
// multi-file edit.
type FileError struct {
	SessionID  string      `json:"session_id,omitempty"`
	TargetFile string      `json:"target_file"`
	Code       int64       `json:"code"`
	Reason     string      `json:"reason"`
	Message    string      `json:"message"`
	Validation *Validation `json:"validation,omitempty"`
	Edit       *EditResult `json:"edit,omitempty"`
}

// FileChange is one file a multi-file edit (a *** Begin Patch envelope)
// changed: kind add, update, delete or move (a move reports its
// destination in MovedTo).
type FileChange struct {
	Kind       string      `json:"kind"`
	TargetFile string      `json:"target_file"`
	MovedTo    string      `json:"moved_to,omitempty"`
	Bytes      int64       `json:"bytes"`
	SHA256     string      `json:"sha256,omitempty"`
	Validation *Validation `json:"validation,omitempty"`
}
