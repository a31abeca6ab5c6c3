package mcpserver

// The tools' names and input schemas. The instructions, the tools'
// descriptions and what the results say are in protocol/prompts.go, with
// every other text a model reads; the schemas' field descriptions are
// here, beside the fields.
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

// Instructions is the server's instructions field.
const Instructions = protocol.PromptMCPInstructions

// Tool descriptions.
const (
	descWriteBegin    = protocol.PromptMCPWriteBegin
	descWriteAppend   = protocol.PromptMCPWriteAppend
	descWriteFinalize = protocol.PromptMCPWriteFinalize
	descWriteAbort    = protocol.PromptMCPWriteAbort
	descWriteFile     = protocol.PromptMCPWriteFile
	descEditFile      = protocol.PromptMCPEditFile
	descUndo          = protocol.PromptMCPUndo
	descListSessions  = protocol.PromptMCPListSessions
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
    "expected_sha256": {"type": "string", "description": "The sha256 (64 lowercase hex digits) of the file's content your change is based on, as a result gave it, or \"absent\" for a file that must not exist. If the file now holds other content, nothing is written and you are told both hashes: read it again."},
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
    "expected_sha256": {"type": "string", "description": "The sha256 (64 lowercase hex digits) of the file's content your change is based on, as a result gave it, or \"absent\" for a file that must not exist. If the file now holds other content, nothing is written and you are told both hashes: read it again."},
    "content": {"type": "string", "description": "The whole content (the text to add, for append). At most 256 KiB."}
  },
  "required": ["target_file", "operation", "content"]
}`)

	schemaEditFile = json.RawMessage(`{
  "type": "object",
  "properties": {
    "target_file": {"type": "string", "description": "The file the edit changes; may be left out when the edit names its files."},
    "dry_run": {"type": "boolean", "description": "Return the diff and change nothing."},
    "expected_sha256": {"type": "string", "description": "The sha256 (64 lowercase hex digits) of the file's content your change is based on, as a result gave it, or \"absent\" for a file that must not exist. If the file now holds other content, nothing is written and you are told both hashes: read it again."},
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
