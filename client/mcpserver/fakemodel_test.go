package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeModel is a scripted Anthropic Messages endpoint: a brain decides
// each turn of the conversation from the request it gets (the tools
// offered, the last tool results), as a model would, and the endpoint
// streams its answer as the API does.
type fakeModel struct {
	t     *testing.T
	srv   *httptest.Server
	brain func(turn) action

	mu    sync.Mutex
	turns []turn
	log   strings.Builder
}

// turn is what the model sees of one request: the tools offered and the
// tool results of the last message.
type turn struct {
	tools   []string
	results []toolResult
	body    []byte
}

// toolResult is one tool_result block the host sent back.
type toolResult struct {
	id      string
	isError bool
	text    string
}

// action is the model's answer: text, and optionally one tool call; cut
// stops the call's input half way at max_tokens, as a model's output
// limit does.
type action struct {
	text  string
	tool  string
	input string
	cut   bool
}

func newFakeModel(t *testing.T, brain func(turn) action) *fakeModel {
	f := &fakeModel{t: t, brain: brain}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":1000}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	tr := parseTurn(body)
	// Requests that do not offer the host's own tools are side requests
	// (titles, quota probes): a short answer.
	if !slices.Contains(tr.tools, "Bash") && !slices.Contains(tr.tools, "ToolSearch") && !hasOrion(tr.tools) {
		stream(w, "end_turn", action{text: "Side reply."}, 0)
		return
	}
	f.mu.Lock()
	f.turns = append(f.turns, tr)
	n := len(f.turns)
	f.mu.Unlock()
	// ORION_DUMP_TURNS=DIR keeps each request, for when a new release of
	// the host changes their shape.
	if os.Getenv("ORION_DUMP_TURNS") != "" {
		os.WriteFile(fmt.Sprintf("%s/turn%d.json", os.Getenv("ORION_DUMP_TURNS"), n), body, 0o644)
	}
	a := f.brain(tr)
	f.mu.Lock()
	fmt.Fprintf(&f.log, "turn %d: tools %d, results %s -> %s %.80s cut=%v\n", n, len(tr.tools), brief(tr.results), a.tool, a.input, a.cut)
	f.mu.Unlock()
	stop := "end_turn"
	if a.tool != "" {
		stop = "tool_use"
	}
	if a.cut {
		stop = "max_tokens"
	}
	stream(w, stop, a, n)
}

func hasOrion(tools []string) bool {
	return slices.ContainsFunc(tools, func(s string) bool { return strings.HasPrefix(s, "mcp__orion__") })
}

func brief(rs []toolResult) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("[err=%v %.100q]", r.isError, r.text))
	}
	return strings.Join(parts, " ")
}

// Log is what the model saw and did, turn by turn, for a failure message.
func (f *fakeModel) Log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log.String()
}

func (f *fakeModel) Turns() []turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.turns)
}

// parseTurn reads the tools and the last message's tool results.
func parseTurn(body []byte) turn {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	t := turn{body: body}
	for _, tool := range req.Tools {
		t.tools = append(t.tools, tool.Name)
	}
	if len(req.Messages) == 0 {
		return t
	}
	// The results of the last tool call are in the user messages after
	// the last assistant message; Claude Code may add other messages
	// (a system reminder) after them.
	from := len(req.Messages)
	for from > 0 && req.Messages[from-1].Role != "assistant" {
		from--
	}
	for _, msg := range req.Messages[from:] {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		}
		if msg.Role != "user" || json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				t.results = append(t.results, toolResult{id: b.ToolUseID, isError: b.IsError, text: contentText(b.Content)})
			}
		}
	}
	return t
}

// contentText is a tool result's content: a string, or text blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// stream writes one streamed Messages response.
func stream(w http.ResponseWriter, stop string, a action, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant", "model": "claude-fake", "content": []any{},
		"stop_reason": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	idx := 0
	if a.text != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]string{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]string{"type": "text_delta", "text": a.text}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if a.tool != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_fake_%d", n), "name": a.tool, "input": map[string]any{}}})
		input := a.input
		if a.cut {
			input = input[:len(input)/2]
		}
		for len(input) > 0 {
			k := min(len(input), 4000)
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]string{"type": "input_json_delta", "partial_json": input[:k]}})
			input = input[k:]
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 5}})
	ev("message_stop", map[string]string{"type": "message_stop"})
}

// js is v as JSON text.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
