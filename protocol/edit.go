package protocol

import "encoding/json"

// Operations that change part of an existing file.
const (
	// OpPatch applies a patch_spec (insert at a line or marker, replace
	// lines, a block or a pattern) with the streamed content as the new
	// text.
	OpPatch Operation = "patch"
	// OpEdit treats the streamed content as the edit itself: search/replace
	// blocks, a unified diff, or a *** Begin Patch envelope, which may touch
	// several files and is applied as one transaction.
	OpEdit Operation = "edit"
)

// PatchSpec is patch_spec as the wire carries it: {"type": ..., "line",
// "start_line", "end_line", "marker", "start_marker", "end_marker",
// "pattern", "regex", "count" (a number or "all"), "keep_markers",
// "expand"}. Types: insert_before_line, insert_after_line, replace_lines,
// prepend, insert_before_marker, insert_after_marker, replace_block,
// replace_pattern, replace_all. The daemon decodes it.
type PatchSpec = json.RawMessage

// EditBlock is the outcome of one block or hunk of an edit.
type EditBlock struct {
	Index int    `json:"index"`
	Path  string `json:"path,omitempty"`
	// Status: applied, already_applied, no_match, ambiguous,
	// context_mismatch, overlap, out_of_range, count_mismatch, conflict.
	Status    string `json:"status"`
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
	Matches   []int  `json:"matches,omitempty"`
	// ElisionsMerged counts the lines the block left out ("// ...
	// existing code ..." in its REPLACE part, Aider's "..." lines) that
	// were filled from the file.
	ElisionsMerged int    `json:"elisions_merged,omitempty"`
	Message        string `json:"message,omitempty"`
}

// EditResult is what a patch or edit did.
type EditResult struct {
	// Format: patch, search_replace, unified_diff or begin_patch.
	Format string `json:"format"`
	// Dialect is the agent format the edit was detected as, and whose
	// rules applied it: codex_apply_patch, aider_editblock,
	// aider_diff_fenced, cline_replace_in_file or unified_diff.
	Dialect string `json:"dialect,omitempty"`
	Changed bool   `json:"changed"`
	// AlreadyApplied: every block, hunk or file operation was already in
	// place, so the edit changed nothing and no file content was written.
	// A summary must say so, never that a file was written.
	AlreadyApplied bool        `json:"already_applied,omitempty"`
	Blocks         []EditBlock `json:"blocks"`
}
