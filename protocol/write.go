package protocol

// SessionWrite is session.write: a session begun, given all its content
// and finalized in one request, for a client that has the whole content
// (a tool call's argument, a small file). The session and its content are
// journaled in one store commit before the file is written (temp file,
// fsync, rename, directory fsync), and the reply comes once the file is
// durable: four syncs for a small file where begin, append and finalize
// take eight. The result is finalize's. A write refused by a check is
// kept as needs_corrections, like a finalize's; a request refused before
// (a path outside the roots, content over the chunk limit) leaves no
// session behind.
var SessionWrite = Method[WriteParams, FinalizeResult]{MethodSessionWrite}

// WriteParams are the params of session.write: begin's, and the content.
type WriteParams struct {
	BeginParams
	// Content is the whole content (the text to add, for append), at most
	// the daemon's max_chunk_bytes; larger content takes begin, appends
	// and finalize. It comes last on the wire, after the small fields.
	Content string `json:"content"`
}

// Check reports the first field of p over its limit, as BeginParams.Check;
// the content is bounded by the daemon's chunk limit.
func (p *WriteParams) Check() error { return p.BeginParams.Check() }
