package protocol

// ToolName is the name of the one tool the model sees.
const ToolName = "WritePlanTool_begin"

// ToolDefinition is an OpenAI-style function tool definition.
type ToolDefinition struct {
	Type     string       `json:"type"`
	Function FunctionSpec `json:"function"`
}

// FunctionSpec is the function part of a tool definition.
type FunctionSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// ToolsResult is the result of tools.definitions.
type ToolsResult struct {
	Tools []ToolDefinition `json:"tools"`
}

// WritePlanToolBegin returns the definition of WritePlanTool_begin. It
// carries metadata only: there is deliberately no content parameter, because
// large content inside a JSON string argument is what breaks. A patch says
// where its text goes in patch_spec, a small object; the text itself, like
// an edit, is streamed after the call.
func WritePlanToolBegin() ToolDefinition {
	ops := make([]string, len(Operations))
	for i, op := range Operations {
		ops[i] = string(op)
	}
	return ToolDefinition{
		Type: "function",
		Function: FunctionSpec{
			Name:        ToolName,
			Description: PromptToolDescription,
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"intent": map[string]any{
						"type":        "string",
						"description": PromptToolIntent,
					},
					"target_file": map[string]any{
						"type":        "string",
						"description": PromptToolTargetFile,
					},
					"operation": map[string]any{
						"type":        "string",
						"enum":        ops,
						"description": PromptToolOperation,
					},
					"patch_spec": patchSpecSchema(),
				},
				"required":             []string{"intent", "target_file", "operation"},
				"additionalProperties": false,
			},
		},
	}
}

// patchSpecSchema describes patch_spec (see PatchSpec): the type and the
// fields each type takes.
func patchSpecSchema() map[string]any {
	integer := func(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	boolean := func(desc string) map[string]any { return map[string]any{"type": "boolean", "description": desc} }
	return map[string]any{
		"type":        "object",
		"description": PromptToolPatchSpec,
		"properties": map[string]any{
			"type": map[string]any{
				"type": "string",
				"enum": []string{
					"insert_before_line", "insert_after_line", "replace_lines", "prepend",
					"insert_before_marker", "insert_after_marker", "replace_block", "replace_pattern", "replace_all",
				},
				"description": "insert_before_line, insert_after_line: at line (insert_after_line with line 0 inserts at the top). " +
					"replace_lines: lines start_line to end_line. prepend: at the top. " +
					"insert_before_marker, insert_after_marker: before the line where marker starts, after the line where it ends. " +
					"replace_block: from the line with start_marker through the next line with end_marker, those lines included unless keep_markers. " +
					"replace_pattern: matches of the regular expression pattern. replace_all: occurrences of the literal text pattern.",
			},
			"line":         integer("The line of insert_before_line and insert_after_line."),
			"start_line":   integer("First line replace_lines replaces."),
			"end_line":     integer("Last line replace_lines replaces."),
			"marker":       str("Text that locates insert_before_marker and insert_after_marker."),
			"start_marker": str("Text on the first line of the block replace_block replaces."),
			"end_marker":   str("Text on the last line of that block."),
			"pattern":      str("replace_pattern: a regular expression (RE2). replace_all: literal text."),
			"regex":        boolean("Makes marker, start_marker and end_marker regular expressions (RE2) instead of literal text."),
			"count": map[string]any{
				"anyOf": []any{
					map[string]any{"type": "integer", "minimum": 1},
					map[string]any{"type": "string", "enum": []string{"all"}},
				},
				"description": `How many matches replace_pattern and replace_all must find: a number, or "all" for any number. Default: 1 for replace_pattern, all for replace_all.`,
			},
			"keep_markers": boolean("replace_block: keep the start_marker and end_marker lines and replace only the lines between them."),
			"expand":       boolean("replace_pattern: expand $1 and ${name} in your text. Off by default, since code often contains $."),
		},
		"required":             []string{"type"},
		"additionalProperties": false,
	}
}

// AnthropicTool is a tool definition in the shape of Anthropic's Messages
// API: the JSON schema sits in input_schema, with no "function" wrapper.
type AnthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

// WritePlanToolBeginAnthropic returns WritePlanTool_begin for Anthropic's
// API: the same name, description and parameters as WritePlanToolBegin,
// so both vendors' models are asked for exactly the same call.
func WritePlanToolBeginAnthropic() AnthropicTool {
	def := WritePlanToolBegin()
	return AnthropicTool{
		Name:        def.Function.Name,
		Description: def.Function.Description,
		InputSchema: def.Function.Parameters,
	}
}
