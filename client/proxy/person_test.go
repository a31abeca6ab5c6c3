package proxy

import "testing"

// A turn begins only on the person's words: in each API, a request whose
// last message is the person's, never one that returns a tool's result
// (the agent going on with its work).
func TestPersonSpeaks(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    dialect
		body string
		want bool
	}{
		{"AnthropicText", anthropic{}, `{"messages":[{"role":"user","content":"fix it"}]}`, true},
		{"AnthropicToolResult", anthropic{}, `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok"}]}]}`, false},
		{"AnthropicSystemAfterPerson", anthropic{}, `{"messages":[{"role":"user","content":"fix it"},{"role":"system","content":"env"}]}`, true},
		{"OpenAIUser", openAI{}, `{"messages":[{"role":"user","content":"fix it"}]}`, true},
		{"OpenAITool", openAI{}, `{"messages":[{"role":"user","content":"fix it"},{"role":"tool","content":"ok"}]}`, false},
		{"ResponsesString", responses{}, `{"input":"fix it"}`, true},
		{"ResponsesUserMessage", responses{}, `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}]}`, true},
		{"ResponsesUserWithoutType", responses{}, `{"input":[{"role":"user","content":"fix it"},{"role":"developer","content":"rules"}]}`, true},
		{"ResponsesFunctionOutput", responses{}, `{"input":[{"role":"user","content":"fix it"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`, false},
		{"ResponsesCustomToolOutput", responses{}, `{"input":[{"role":"user","content":"fix it"},{"type":"custom_tool_call_output","call_id":"c","output":"ok"}]}`, false},
		{"ResponsesNoInput", responses{}, `{"model":"m"}`, false},
		{"GeminiText", gemini{}, `{"contents":[{"role":"user","parts":[{"text":"fix it"}]}]}`, true},
		{"GeminiFunctionResponse", gemini{}, `{"contents":[{"role":"user","parts":[{"text":"fix it"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, false},
		{"GeminiModelLast", gemini{}, `{"contents":[{"role":"model","parts":[{"text":"done"}]}]}`, false},
		{"GeminiNotAnArray", gemini{}, `{"contents":{"role":"user"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := personSpeaks(tc.d, []byte(tc.body)); got != tc.want {
				t.Fatalf("personSpeaks(%s) = %v, want %v", tc.body, got, tc.want)
			}
		})
	}
}
