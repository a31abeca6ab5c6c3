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
// large content inside a JSON string argument is what breaks.
func WritePlanToolBegin() ToolDefinition {
	ops := make([]string, len(WholeFileOperations))
	for i, op := range WholeFileOperations {
		ops[i] = string(op)
	}
	return ToolDefinition{
		Type: "function",
		Function: FunctionSpec{
			Name: ToolName,
			Description: "Start writing a file. Call this with metadata only, never with the file's content. " +
				"The result gives you an end marker. Then write the complete file content as plain assistant " +
				"text (no JSON, no code fence, no commentary), and finish with the end marker on a line of its own.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"intent": map[string]any{
						"type":        "string",
						"description": "One sentence saying what this write does and why.",
					},
					"target_file": map[string]any{
						"type":        "string",
						"description": "Path of the file to write, relative to the workspace root.",
					},
					"operation": map[string]any{
						"type":        "string",
						"enum":        ops,
						"description": "create: new file, fails if it exists. overwrite: replace the whole file. append: add to the end.",
					},
				},
				"required":             []string{"intent", "target_file", "operation"},
				"additionalProperties": false,
			},
		},
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
