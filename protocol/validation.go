package protocol

// ValidationPolicy chooses, per category of finding, whether it blocks the
// write (strict), is reported (warn) or ignored (off). All applies to every
// category not named in Categories. Categories: data_syntax, code_syntax,
// truncation, truncation_hint, placeholder, end_marker.
type ValidationPolicy struct {
	All        string            `json:"all,omitempty"`
	Categories map[string]string `json:"categories,omitempty"`
}

// Repair is one change the daemon made to the content before checking it.
type Repair struct {
	// Kind is stable: end_marker_removed, done_line_removed,
	// code_fence_removed, line_endings_matched, final_newline_matched,
	// invalid_utf8_replaced, bom_matched, ...
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Count   int    `json:"count,omitempty"`
}

// Finding is one problem validation found.
type Finding struct {
	// Code is stable: syntax_error, truncated, unclosed_fence,
	// lazy_placeholder, mid_sentence, empty_heading, no_end_marker, ...
	Code     string `json:"code"`
	Category string `json:"category"`
	Severity string `json:"severity"`
	// Line and Column are 1-based; Column counts characters.
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
	Snippet string `json:"snippet,omitempty"`
	// Preexisting findings were already in the file being replaced and
	// never block.
	Preexisting bool `json:"preexisting,omitempty"`
}

// Validation is the result of checking the content.
type Validation struct {
	FileType  string    `json:"file_type"`
	Checker   string    `json:"checker,omitempty"`
	SyntaxOK  bool      `json:"syntax_ok"`
	Truncated bool      `json:"truncated"`
	Blocked   bool      `json:"blocked"`
	Summary   string    `json:"summary,omitempty"`
	Findings  []Finding `json:"findings"`
	// Skipped says why the content was not checked (too large), if so.
	Skipped string `json:"skipped,omitempty"`
}
