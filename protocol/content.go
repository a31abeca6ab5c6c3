package protocol

// MethodSessionContent reads, bounded, what a session holds: the content
// streamed so far (as journaled, before repair), or the backup of the file
// its write replaced. Read-only; for a person watching, such as the local
// page, never for a model.
const MethodSessionContent = "session.content"

// Content sources session.content reads.
const (
	// ContentStreamed is the content received so far, without the end
	// marker and what followed it.
	ContentStreamed = "streamed"
	// ContentBackup is the target as it was before the session's write
	// replaced it (what session.undo would put back).
	ContentBackup = "backup"
)

// MaxContentBytes caps what one session.content reply carries.
const MaxContentBytes = 4 << 20

// ContentParams are the params of session.content.
type ContentParams struct {
	SessionID string `json:"session_id"`
	// Source is ContentStreamed (default) or ContentBackup.
	Source string `json:"source,omitempty"`
	// MaxBytes caps the bytes returned (default and most MaxContentBytes).
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// ContentResult is the result of session.content.
type ContentResult struct {
	SessionID string `json:"session_id"`
	Source    string `json:"source"`
	// Available is false when the store no longer holds that content (the
	// chunks of a finished session once cleaned, a session that replaced
	// nothing); Content is then empty.
	Available bool `json:"available"`
	// Content is the first Bytes bytes (valid UTF-8: invalid bytes are
	// replaced); Total is the whole size and Truncated says Content stops
	// before it.
	Content   string `json:"content"`
	Bytes     int64  `json:"bytes"`
	Total     int64  `json:"total"`
	Truncated bool   `json:"truncated,omitempty"`
}
