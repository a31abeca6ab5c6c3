package mcpserver

// Every text the model reads from this server: the server instructions,
// the tool descriptions and the input schemas. They live together so that
// they can be read, reviewed and moved into protocol/ (where the other
// model-facing texts of the project are to live) as one piece.
//
// The schemas are literal JSON rather than maps: JSON objects keep the
// order written here, and the long string of each tool (chunk, content,
// edit) comes last, since hosts have been seen to drop the fields that
// follow a long string.

import (
	"encoding/json"

	"github.com/orion-agent/orion/protocol"
)

// patchSpecSchema is the patch_spec schema of WritePlanTool_begin, so that
// both doors describe a patch in the same words.
func patchSpecSchema() string {
	props := protocol.WritePlanToolBegin().Function.Parameters["properties"].(map[string]any)
	b, err := json.Marshal(props["patch_spec"])
	if err != nil {
		panic(err) // a literal map of strings: cannot fail
	}
	return string(b)
}

// Tool names. They are a contract with every host configuration and every
// prompt that names them: keep them.
const (
	ToolWriteBegin    = "write_begin"
	ToolWriteAppend   = "write_append"
	ToolWriteFinalize = "write_finalize"
	ToolWriteAbort    = "write_abort"
	ToolWriteFile     = "write_file"
	ToolEditFile      = "edit_file"
	ToolUndo          = "undo"
	ToolListSessions  = "list_sessions"
)

// ChunkAdviceLines is the chunk size the instructions ask of the model: a
// chunk cut at the model's output limit is lost whole and sent again, so
// it should be cheap to resend, while each chunk is one tool call and one
// round trip.
const ChunkAdviceLines = 100

// WriteFileMaxBytes is the largest content write_file takes in one call.
// Larger content is refused with the advice to use write_begin and
// write_append: a tool call that large is likely to be cut at the model's
// output limit, and then all of it is lost.
const WriteFileMaxBytes = 256 << 10

// Instructions is the server's instructions field: when to use which tool
// and how big a chunk to send.
const Instructions = `Orion writes files through oriond's durable write sessions: every piece you send is journaled before it is acknowledged, the result is checked (syntax, truncation, lazy placeholders) and written atomically, and every write can be undone.

Which tool:
- A small file (up to about 300 lines): write_file with the whole content in one call.
- Anything longer: write_begin, then write_append with the content in order, about 100 lines (a few KB) per call with seq 1, 2, 3..., then write_finalize. A tool call cut off at your output limit is lost whole: with chunks only that chunk is sent again, with write_file the whole file is.
- Changing part of an existing file: edit_file with search/replace blocks, a unified diff or a *** Begin Patch envelope.
- undo puts back what a write replaced; list_sessions shows open and recent writes.

Chunks are the file's exact text: no code fences, no markers, no line numbers; consecutive chunks are joined as they are, so end a chunk after a newline. If a result says a seq is missing, send that seq. Paths are relative to the workspace root (or absolute inside it). If a result says oriond is not running, tell the user the command it names, then send the same call again.`

// Tool descriptions.
const (
	descWriteBegin = `Start writing a file in chunks: use this for anything longer than about 300 lines. Send metadata only, never content. The result gives the session_id and the seq of the first chunk; then call write_append with about 100 lines per call, then write_finalize.`

	descWriteAppend = `Add the next chunk of a write_begin session: the file's exact text, in order, about 100 lines (at most max_chunk_bytes) per call. seq is 1 for the first chunk and one more for each next one. Sending a seq again with the same chunk is safe (it is acknowledged again); a skipped seq is refused with the seq to send.`

	descWriteFinalize = `Finish a write_begin session: check the content and write the file atomically. The result is a summary (bytes, lines, sha256, findings); a refusal says what to fix. dry_run returns the diff and writes nothing.`

	descWriteAbort = `Abandon a write_begin session; nothing is written.`

	descWriteFile = `Write a whole small file in one call (up to about 300 lines; at most 256 KiB). For anything longer use write_begin and write_append: a tool call cut off at your output limit loses all of its content.`

	descEditFile = `Change existing files with an edit in the format you know best: search/replace blocks (<<<<<<< SEARCH / ======= / >>>>>>> REPLACE, or Cline's ------- SEARCH / ======= / +++++++ REPLACE; a file path alone on the line before a block edits that file), a unified diff (---/+++ header, @@ hunks), or a *** Begin Patch ... *** End Patch envelope (Codex apply_patch; Add File, Update File, Delete File, Move to). An edit that touches several files is applied all or nothing. target_file may be left out when the edit names its files.`

	descUndo = `Put back what a completed write replaced (or remove the file it created). Give the session_id of the write, or last: true for the most recent write of this server.`

	descListSessions = `List recent write sessions, newest first: id, file, operation, stage, size. stage filters (awaiting_content, streaming, completed, needs_corrections, truncated, aborted).`
)

// The operations a tool accepts, as a JSON enum.
const operationsEnum = `["create", "overwrite", "append", "patch", "edit"]`

// Input schemas.
var (
	schemaWriteBegin = json.RawMessage(`{
  "type": "object",
  "properties": {
    "target_file": {"type": "string", "description": "Path of the file, relative to the workspace root or absolute inside it."},
    "operation": {"type": "string", "enum": ` + operationsEnum + `, "description": "create: a new file, refused if it exists. overwrite: replace the whole file. append: add to the end. patch: your chunks are the new text for the place patch_spec names. edit: your chunks are an edit (prefer edit_file unless it is long)."},
    "intent": {"type": "string", "description": "One sentence: what this write does and why."},
    "expected_bytes": {"type": "integer", "minimum": 0, "description": "Size of the whole content, if known; a mismatch is reported as possible truncation."},
    "expected_lines": {"type": "integer", "minimum": 0, "description": "Lines of the whole content, if known."},
    "patch_spec": ` + patchSpecSchema() + `
  },
  "required": ["target_file", "operation"]
}`)

	schemaWriteAppend = json.RawMessage(`{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "description": "From write_begin."},
    "seq": {"type": "integer", "minimum": 1, "description": "1 for the first chunk, one more for each next one."},
    "chunk": {"type": "string", "description": "The next piece of the file's exact text, about 100 lines."}
  },
  "required": ["session_id", "seq", "chunk"]
}`)

	schemaWriteFinalize = json.RawMessage(`{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "description": "From write_begin."},
    "dry_run": {"type": "boolean", "description": "Return the diff and write nothing."}
  },
  "required": ["session_id"]
}`)

	schemaWriteAbort = json.RawMessage(`{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "description": "From write_begin."}
  },
  "required": ["session_id"]
}`)

	schemaWriteFile = json.RawMessage(`{
  "type": "object",
  "properties": {
    "target_file": {"type": "string", "description": "Path of the file, relative to the workspace root or absolute inside it."},
    "operation": {"type": "string", "enum": ["create", "overwrite", "append"], "description": "create: a new file, refused if it exists. overwrite: replace the whole file. append: add to the end."},
    "intent": {"type": "string", "description": "One sentence: what this write does and why."},
    "content": {"type": "string", "description": "The whole content (the text to add, for append). At most 256 KiB."}
  },
  "required": ["target_file", "operation", "content"]
}`)

	schemaEditFile = json.RawMessage(`{
  "type": "object",
  "properties": {
    "target_file": {"type": "string", "description": "The file the edit changes; may be left out when the edit names its files."},
    "dry_run": {"type": "boolean", "description": "Return the diff and change nothing."},
    "edit": {"type": "string", "description": "The edit: search/replace blocks, a unified diff or a *** Begin Patch envelope."}
  },
  "required": ["edit"]
}`)

	schemaUndo = json.RawMessage(`{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "description": "The write to undo."},
    "last": {"type": "boolean", "description": "Undo the most recent write of this server instead."}
  }
}`)

	schemaListSessions = json.RawMessage(`{
  "type": "object",
  "properties": {
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many, newest first (default 20)."},
    "stage": {"type": "string", "description": "Only sessions in this stage."}
  }
}`)
)
