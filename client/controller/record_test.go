package controller_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// recorder writes an OpenAI-compatible chat-completions stream the way
// DeepSeek and OpenAI send it: one "data:" line per chunk, a blank line
// after each, "data: [DONE]" at the end of each response.
type recorder struct {
	b     strings.Builder
	resp  int
	model string
}

func newRecorder() *recorder { return &recorder{model: "deepseek-chat"} }

// wireChunk keeps the field order providers send.
type wireChunk struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int          `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
}

type wireChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason any            `json:"finish_reason"`
}

func (r *recorder) chunk(delta map[string]any, finish any) {
	c := wireChunk{
		ID:      fmt.Sprintf("chatcmpl-%d", r.resp),
		Object:  "chat.completion.chunk",
		Created: 1767225600 + r.resp,
		Model:   r.model,
		Choices: []wireChoice{{Index: 0, Delta: delta, FinishReason: finish}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		panic(err)
	}
	r.b.WriteString("data: " + strings.TrimSuffix(buf.String(), "\n") + "\n\n")
}

// start opens a response with the role chunk.
func (r *recorder) start() {
	r.resp++
	r.chunk(map[string]any{"role": "assistant", "content": ""}, nil)
}

// content sends each part as one content delta.
func (r *recorder) content(parts ...string) {
	for _, p := range parts {
		r.chunk(map[string]any{"content": p}, nil)
	}
}

// toolStart sends the first fragment of a tool call: its id and name.
func (r *recorder) toolStart(index int, id, name string) {
	r.chunk(map[string]any{"tool_calls": []any{map[string]any{
		"index": index, "id": id, "type": "function",
		"function": map[string]any{"name": name, "arguments": ""},
	}}}, nil)
}

// toolArgs sends each part as one arguments fragment of call index.
func (r *recorder) toolArgs(index int, parts ...string) {
	for _, p := range parts {
		r.chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": index, "function": map[string]any{"arguments": p},
		}}}, nil)
	}
}

// finish ends the response with a finish reason and [DONE].
func (r *recorder) finish(reason string) {
	r.chunk(map[string]any{}, reason)
	r.b.WriteString("data: [DONE]\n\n")
}

func (r *recorder) comment(text string) { r.b.WriteString(": " + text + "\n\n") }

func (r *recorder) String() string { return r.b.String() }

// split cuts s into pieces of the given sizes in characters, cycling
// through sizes, as a model's tokens cut text.
func split(s string, sizes ...int) []string {
	rs := []rune(s)
	var out []string
	for i, k := 0, 0; i < len(rs); k++ {
		n := min(sizes[k%len(sizes)], len(rs)-i)
		out = append(out, string(rs[i:i+n]))
		i += n
	}
	return out
}

// lines splits text after each newline, one delta per line.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
