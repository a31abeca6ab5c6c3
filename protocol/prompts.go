package protocol

import "strings"

// Every text a model reads, in one place: the tool's description, the
// instructions and prompts the daemon sends, and the tool results and
// prompts of the controllers (Go, and Node's generated from this file). A
// text with {name} placeholders is a template: Fill puts the values in.
// Changing a text here changes it for every client; the shared fixtures
// under client/testdata/streams show the result word for word.

// Fill returns template with each {name} replaced by its value, given as
// name, value pairs. Placeholders without a value stay as they are, and a
// value is never scanned for placeholders itself.
func Fill(template string, pairs ...string) string {
	if len(pairs) == 0 {
		return template
	}
	oldnew := make([]string, 0, len(pairs))
	for i := 0; i+1 < len(pairs); i += 2 {
		oldnew = append(oldnew, "{"+pairs[i]+"}", pairs[i+1])
	}
	return strings.NewReplacer(oldnew...).Replace(template)
}

// The WritePlanTool_begin definition (tools.go) the model is offered.
const (
	PromptToolDescription = "Start writing or changing a file. Call this with metadata only, never with the file's content. " +
		"The result gives you an end marker. Then write the content as plain assistant text " +
		"(no JSON, no code fence, no commentary), and finish with the end marker on a line of its own. " +
		"The content is the whole file (create, overwrite), the text to add (append), " +
		"the new text for the place patch_spec names (patch), or the edit itself (edit)."
	PromptToolIntent     = "One sentence saying what this write does and why."
	PromptToolTargetFile = "Path of the file to write, relative to the workspace root. " +
		"For an edit written as a *** Begin Patch envelope, an existing file the envelope updates; the envelope's own paths say which files change."
	PromptToolOperation = "create: new file, fails if it exists. overwrite: replace the whole file. append: add to the end. " +
		"patch: change one part of an existing file; patch_spec says where, and your text is the new text for that place. " +
		"edit: change an existing file; your text is the edit, in the format you know best: " +
		"search/replace blocks (<<<<<<< SEARCH, the exact lines to find, =======, their replacement, >>>>>>> REPLACE, or Cline's ------- SEARCH / ======= / +++++++ REPLACE; " +
		"several blocks, applied in order; a file path alone on the line before a block edits that file, an empty SEARCH creates it), " +
		"a unified diff (---/+++ header, @@ hunks with context lines), " +
		"or a *** Begin Patch ... *** End Patch envelope (*** Add File:, *** Update File: with @@ context, *** Delete File:, *** Move to:), " +
		"which may touch several files and is applied all or nothing."
	PromptToolPatchSpec = "Required with operation patch, left out otherwise: where your text goes. " +
		"Lines are 1-based and inclusive. A marker or pattern must match exactly once unless count says otherwise; " +
		"when it does not, nothing is written and the error lists the matches."
	// PromptSystem is what a client that adds the tool to an agent's
	// request (orionctl proxy) adds to its system prompt: when to use it,
	// in the fewest words that make models use it.
	PromptSystem = "To create a file or replace a whole file, call " + ToolName +
		" with metadata only (intent, target_file, operation), never with the file's content, instead of any other tool that writes files. " +
		"Its result gives you an end marker: then write the complete content as plain text (no code fence, no commentary) " +
		"and end with the end marker on a line of its own. Other tools remain fine for small edits."
)

// The daemon's instructions (session.begin's result), by operation, and
// its prompts. {target} is the file as the model named it, {marker} the
// session's end marker.
const (
	PromptInstructionsEnd    = "When you are finished, write {marker} on a line of its own."
	PromptInstructionsCreate = "Now output the complete content of {target} as plain text: no JSON, no code fence around the whole file, " +
		"no explanation before or after it. " + PromptInstructionsEnd
	PromptInstructionsAppend = "Now output only the text to add to the end of {target} as plain text: no JSON, no code fence around the whole file, " +
		"no explanation before or after it. " + PromptInstructionsEnd
	PromptInstructionsPatch = "Now output only the text to insert into {target}, or to put in place of what patch_spec names, " +
		"as plain text: not the rest of the file, no JSON, no code fence around it, no explanation before or after it. " + PromptInstructionsEnd
	PromptInstructionsEdit = "Now output the edit to {target} as plain text, in the format you know best: " +
		"search/replace blocks (<<<<<<< SEARCH, the exact lines to find, =======, their replacement, >>>>>>> REPLACE, " +
		"or Cline's ------- SEARCH, =======, +++++++ REPLACE; several blocks are applied in order; " +
		"a file path alone on the line before a block edits that file, and an empty SEARCH creates it), " +
		"a unified diff (---/+++ header, @@ hunks with context lines), " +
		"or a *** Begin Patch ... *** End Patch envelope (Codex's apply_patch). " +
		"An edit that touches several files is applied all or nothing. " +
		"No JSON, no code fence around it, no explanation before or after it. " + PromptInstructionsEnd
	// PromptIdle is session.idle's prompt: the model stopped without the
	// marker.
	PromptIdle = "If you are finished writing {target}, reply with {marker} on its own line; otherwise continue exactly where you stopped."
	// PromptContinue asks for the rest of a file cut off after {lines}
	// lines; {where} is "from line N" or "from the middle of line N", and
	// {tail} the last lines written (PromptContinueTail) or nothing.
	PromptContinue       = "Continue writing {target} {where}. Do not repeat what you already wrote{tail}Finish with {marker} on a line of its own."
	PromptContinueFrom   = "from line {line}"
	PromptContinueMiddle = "from the middle of line {line}"
	PromptContinueTail   = "; it ended with:\n"
	PromptContinueNoTail = ".\n"
	// PromptContinueShort is a controller's continue prompt when the daemon
	// gave none.
	PromptContinueShort = "Continue writing {target} from line {line}. Do not repeat what you already wrote. Finish with {marker} on a line of its own."
)

// Instructions returns the instructions for op, filled.
func Instructions(op Operation, target, marker string) string {
	t := PromptInstructionsCreate
	switch op {
	case OpAppend:
		t = PromptInstructionsAppend
	case OpPatch:
		t = PromptInstructionsPatch
	case OpEdit:
		t = PromptInstructionsEdit
	}
	return Fill(t, "target", target, "marker", marker)
}

// The tool results a controller answers WritePlanTool_begin with, and its
// prompts.
const (
	// Placeholders of the "resend" arguments, for what did not arrive
	// usable.
	PromptPlaceholderIntent     = "<one sentence: what this write does>"
	PromptPlaceholderTargetFile = "<path of the file to write>"
	PromptPlaceholderOperation  = "<create, overwrite, append, patch or edit>"
	PromptPlaceholderPatchSpec  = `<object saying where your text goes, e.g. {"type": "replace_lines", "start_line": 3, "end_line": 5}>`
	// PromptPlaceholderOperationOr is the operation placeholder when a
	// patch_spec came with another operation {op}.
	PromptPlaceholderOperationOr = "<patch, or {op} without patch_spec>"

	PromptResend = `Call WritePlanTool_begin again with complete JSON arguments: exactly the three string fields shown in "resend", ` +
		`replacing any <...> placeholder. Put no file content in the arguments: you write the content as plain text after the call.`
	// PromptResendPatch is PromptResend for a resend that carries a
	// patch_spec.
	PromptResendPatch = `Call WritePlanTool_begin again with complete JSON arguments: exactly the fields shown in "resend", with patch_spec as a JSON object, ` +
		`replacing any <...> placeholder. Put no file content in the arguments: you write the text as plain text after the call.`

	PromptArgumentsMissing = "WritePlanTool_begin arrived without arguments, so no file was started."
	// PromptArgumentsTruncated: {count} is how many characters arrived,
	// with the unit ("1 character", "12 characters"); {where} is a
	// PromptTruncatedInside or PromptTruncatedAfter or nothing.
	PromptArgumentsTruncated = "The arguments of WritePlanTool_begin were cut off after {count}{where}: they are not complete JSON, so no file was started."
	PromptTruncatedInside    = `, inside the value of "{field}"`
	PromptTruncatedAfter     = `, after the value of "{field}"`
	// PromptArgumentsMalformed: {char} is the unexpected character, {pos}
	// its 1-based position.
	PromptArgumentsMalformed = "The arguments of WritePlanTool_begin are not valid JSON: unexpected {char} at character {pos}, so no file was started."
	// PromptArgumentsInvalid: {problems} are the Problem texts below,
	// joined with "; ".
	PromptArgumentsInvalid = "The arguments of WritePlanTool_begin are incomplete: {problems}. No file was started."

	PromptProblemMissing          = `"{field}" is missing`
	PromptProblemNotString        = `"{field}" must be a string, not {kind}`
	PromptProblemEmpty            = `"{field}" is empty`
	PromptProblemOperation        = `"operation" must be create, overwrite, append, patch or edit, not "{op}"`
	PromptProblemPatchSpecMissing = `"patch_spec" is missing: operation patch needs it to say where your text goes`
	PromptProblemPatchSpecType    = `"patch_spec" must be an object, not {kind}`
	PromptProblemPatchSpecJSON    = `"patch_spec" is not valid JSON`
	PromptProblemPatchSpecEmpty   = `"patch_spec" is empty: operation patch needs its type and fields to say where your text goes`
	PromptProblemPatchSpecWithout = `"patch_spec" goes only with operation patch, not "{op}": ` +
		`use patch to change only the part it names, or leave patch_spec out`

	// PromptIgnored: {names} are the quoted members, joined with ", ".
	PromptIgnored = "The argument(s) {names} are not parameters of WritePlanTool_begin and were ignored; " +
		"write the file's content as plain text, as the instructions say."
	// PromptOneAtATime is the note of a call made while {previous} is
	// still being written.
	PromptOneAtATime = "Files are written one at a time, in the order of your calls: " +
		"output this file's content right after the end marker line of {previous}."
	// PromptRefused prefixes the daemon's refusal of session.begin, then
	// the refusal's advice (RefusalAdvice) after ". ".
	PromptRefused = "No file was started: {message}"
	// PromptUnreachable is the refusal of a call the daemon did not
	// answer.
	PromptUnreachable = "oriond could not be reached ({error}); call WritePlanTool_begin again"
	// PromptStopped: a session failed while the model wrote it.
	PromptStopped = "Writing {target} stopped: {message}. Do not continue that file; call WritePlanTool_begin again to write it."
	// PromptNotWritten: finalize refused the content.
	PromptNotWritten = "{target} was not written: {message}."
	// PromptWritten is what a client that runs the tool loop itself
	// (orionctl proxy) tells the model after a file was written;
	// {summary} is the controller's one-line summary.
	PromptWritten = "WritePlanTool_begin: the file is written: {summary}. Do not write it again; go on with the task."
)

// RefusalAdvice says what a model should do instead, for each reason of a
// session.begin refusal it can fix; it follows the daemon's message in the
// tool result (PromptRefused). Reasons a model cannot fix have none.
var RefusalAdvice = map[string]string{
	ReasonTargetExists:  `Use "operation": "overwrite" to replace it or "append" to add to it, or choose another target_file.`,
	ReasonOutsideRoots:  "Choose a target_file inside the workspace.",
	ReasonSymlinkEscape: "Choose a target_file inside the workspace.",
	ReasonRelativePath:  "Choose a target_file inside the workspace.",
	// Missing directories are made: what is refused is a file standing
	// where a directory of the path should be.
	ReasonParentMissing:    "A file stands where a directory of target_file should be: choose a target_file whose directories are directories or do not exist yet (missing ones are made).",
	ReasonIsDirectory:      "Choose a target_file that is a regular file.",
	ReasonSpecialFile:      "Choose a target_file that is a regular file.",
	ReasonTargetMissing:    `patch and edit change an existing file: use "operation": "create" to write a new one, or choose a target_file that exists.`,
	ReasonInvalidPatchSpec: "Correct patch_spec as this says and call WritePlanTool_begin again.",
	ReasonProtected: "That file is protected because it can run code or change how tools behave later " +
		"(dotfiles of the home directory, .git internals, editors' and agents' own configuration), and only the person can lift that. " +
		"Do not try another path to the same file. If it must be written, tell the person exactly this: " +
		"oriond protects it; to allow it, start oriond with --allow-protected set to the path this message names " +
		"(or add it to allow-protected in oriond's configuration file).",
	ReasonWorkspaceNotAllowed: "No file can be written in this workspace until the person allows it; do not retry with other paths. " +
		"Tell the person exactly this: oriond refused the workspace; to allow it without a restart, run orionctl allow with the workspace directory " +
		"(or start oriond with --allow-root set to it).",
	ReasonOutsideWorkspace: "Choose a target_file inside the workspace: a path relative to it, without .. leading out of it.",
}

// The texts of the MCP server (orionctl mcp): its instructions, its tools'
// descriptions and what its results say. The tool names are
// client/mcpserver's; the numbers (100 lines a chunk, 256 KiB for
// write_file) are its limits, and its tests hold the texts to them.
const (
	// PromptMCPInstructions is the server's instructions field: when to
	// use which tool and how big a chunk to send.
	PromptMCPInstructions = `Orion writes files through oriond's durable write sessions: every piece you send is journaled before it is acknowledged, the result is checked (syntax, truncation, lazy placeholders) and written atomically, and every write can be undone.

Which tool:
- A small file (up to about 300 lines): write_file with the whole content in one call.
- Anything longer: write_begin, then write_append with the content in order, about 100 lines (a few KB) per call with seq 1, 2, 3..., then write_finalize. A tool call cut off at your output limit is lost whole: with chunks only that chunk is sent again, with write_file the whole file is.
- Changing part of an existing file: edit_file with search/replace blocks, a unified diff or a *** Begin Patch envelope.
- undo puts back what a write replaced; list_sessions shows open and recent writes.

Chunks are the file's exact text: no code fences, no markers, no line numbers; consecutive chunks are joined as they are, so end a chunk after a newline. If a result says a seq is missing, send that seq. Paths are relative to the workspace root (or absolute inside it). If a result says oriond is not running, tell the user the command it names, then send the same call again.`

	PromptMCPWriteBegin = `Start writing a file in chunks: use this for anything longer than about 300 lines. Send metadata only, never content. ` +
		`The result gives the session_id and the seq of the first chunk; then call write_append with about 100 lines per call, then write_finalize.`
	PromptMCPWriteAppend = `Add the next chunk of a write_begin session: the file's exact text, in order, about 100 lines (at most max_chunk_bytes) per call. ` +
		`seq is 1 for the first chunk and one more for each next one. Sending a seq again with the same chunk is safe (it is acknowledged again); ` +
		`a skipped seq is refused with the seq to send.`
	PromptMCPWriteFinalize = `Finish a write_begin session: check the content and write the file atomically. ` +
		`The result is a summary (bytes, lines, sha256, findings); a refusal says what to fix. dry_run returns the diff and writes nothing.`
	PromptMCPWriteAbort = `Abandon a write_begin session; nothing is written.`
	PromptMCPWriteFile  = `Write a whole small file in one call (up to about 300 lines; at most 256 KiB). ` +
		`For anything longer use write_begin and write_append: a tool call cut off at your output limit loses all of its content.`
	PromptMCPEditFile = `Change existing files with an edit in the format you know best: ` +
		`search/replace blocks (<<<<<<< SEARCH / ======= / >>>>>>> REPLACE, or Cline's ------- SEARCH / ======= / +++++++ REPLACE; ` +
		`a file path alone on the line before a block edits that file), a unified diff (---/+++ header, @@ hunks), ` +
		`or a *** Begin Patch ... *** End Patch envelope (Codex apply_patch; Add File, Update File, Delete File, Move to). ` +
		`An edit that touches several files is applied all or nothing. target_file may be left out when the edit names its files.`
	PromptMCPUndo = `Put back what a completed write replaced (or remove the file it created). ` +
		`Give the session_id of the write, or last: true for the most recent write of this server.`
	PromptMCPListSessions = `List recent write sessions, newest first: id, file, operation, stage, size. ` +
		`stage filters (awaiting_content, streaming, completed, needs_corrections, truncated, aborted).`

	// PromptMCPBegun is write_begin's instructions: {id} the session,
	// {target} and {op} the file and operation, {what} one of the
	// PromptMCPWhat texts, {lines} the lines a chunk, {limit} the most a
	// chunk may hold.
	PromptMCPBegun = "Session {id} is open for {target} ({op}). Now call write_append with session_id {id} and seq 1, 2, 3...: " +
		"{what} in order, about {lines} lines per call (never over {limit}), each chunk ending after a newline. " +
		"Then call write_finalize with session_id {id}."
	PromptMCPWhatFile   = "the file's exact text"
	PromptMCPWhatAppend = "the exact text to add to the end"
	PromptMCPWhatPatch  = "the exact new text for the place patch_spec names"
	PromptMCPWhatEdit   = "the edit"

	// PromptMCPStored and PromptMCPStoredAgain answer write_append: {seq}
	// the chunk, {so_far} the lines and bytes so far, {next} the seq to
	// send next.
	PromptMCPStored      = "Stored chunk {seq}: {so_far}. Next: seq {next}, or write_finalize when the file is complete."
	PromptMCPStoredAgain = "Chunk {seq} was already stored with the same text (nothing stored twice); {so_far}. " +
		"Next: seq {next}, or write_finalize when the file is complete."

	// PromptMCPDaemonDown: {socket} and {command}, the command that starts
	// oriond on it.
	PromptMCPDaemonDown = "oriond is not running (socket {socket}): ask the user to start it with `{command}` " +
		"(or `oriond service install` to have it start at login), then send the same call again; everything acknowledged so far is kept"
	// PromptMCPOutsideWorkspace: {target} as given, {roots} the roots,
	// {first} the one a relative path resolves against.
	PromptMCPOutsideWorkspace = "{target} is outside the workspace: write only inside {roots} (a relative path resolves against {first})"
	// PromptMCPSessionOutsideWorkspace: session {id} writes outside
	// {roots}, the server's roots.
	PromptMCPSessionOutsideWorkspace = "Session {id} belongs to another workspace: this server acts only on writes inside {roots}. " +
		"Nothing was done; list_sessions shows the writes of this workspace."
	// PromptMCPTooLarge: write_file's content over {limit}; {size} its
	// size, {lines} the lines a chunk.
	PromptMCPTooLarge = "write_file takes at most {limit} of content, and this is {size}: nothing was written. " +
		"Use write_begin, then write_append with about {lines} lines per call, then write_finalize."
	// PromptMCPMessageTooLarge: a {tool} call of {size}, over {limit}, the
	// most one message to the MCP server may carry; {lines} the lines a
	// chunk.
	PromptMCPMessageTooLarge = "This {tool} call is {size}, over the {limit} one message to this server may carry: it was not read and nothing was written. " +
		"Write a long file with write_begin, then write_append with about {lines} lines per call, then write_finalize; split a long edit into several edit_file calls."

	// Refusals in the server's terms; {last} is the last chunk stored and
	// {next} the seq to send.
	PromptMCPSeqGap = "Refused: that seq skips ahead. The session has chunks 1 to {last}; send seq {next} next, " +
		"with the text that follows chunk {last}. Nothing was stored."
	PromptMCPSeqConflict = "Refused: that seq was already stored with different text. " +
		"Send the next seq instead; to start over, write_abort this session and begin again."
	PromptMCPSessionNotFound = "No session {id}: it was never begun, it finished long ago, or the daemon stopped before any of its text was stored. " +
		"Start the write again with write_begin (or write_file for a small file)."
	PromptMCPSessionClosed = "{message} To write the file again, begin a new session."
	// PromptMCPCheckRefused: {message} the daemon's first sentence,
	// {findings} PromptMCPFindings or nothing.
	PromptMCPCheckRefused = "Refused, nothing was written: {message}{findings} Fix the content and write the file again " +
		"(write_file, or write_begin and chunks); the next write of this file counts as a corrected attempt."
	PromptMCPFindings = " Findings: {findings}."
	// PromptMCPEditRefused: {blocks} says, block by block, what did not
	// apply.
	PromptMCPEditRefused       = "The edit did not apply, nothing was changed: {message}{blocks} Read the file, then send the edit again with the exact current text."
	PromptMCPAttemptsExhausted = "{message} Stop writing this file and ask the user how to proceed."
)
