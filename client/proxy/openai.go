package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/protocol"
)

// openAI is the Chat Completions API.
type openAI struct{}

func (openAI) name() string { return dialectOpenAI }

func (openAI) prepare(body []byte) (*agentRequest, error) {
	req, dec, err := decodeRequest(body, func(t json.RawMessage) string {
		var d struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(t, &d)
		return d.Function.Name
	})
	if err != nil {
		return nil, err
	}
	// The usage of every round is summed for the agent.
	so := map[string]json.RawMessage{}
	if raw, ok := dec.fields["stream_options"]; ok {
		var o struct {
			IncludeUsage bool `json:"include_usage"`
		}
		_ = json.Unmarshal(raw, &o)
		req.includeUsage = o.IncludeUsage
		_ = json.Unmarshal(raw, &so)
	}
	if req.carries {
		return req, nil
	}
	f := dec.fields
	f["stream"] = json.RawMessage("true")
	so["include_usage"] = json.RawMessage("true")
	f["stream_options"] = mustJSON(so)
	f["tools"] = mustJSON(append(dec.tools, openAIToolJSON()))
	// The instruction goes after the agent's own system and developer
	// messages, so their order (and any prompt cache on them) is kept.
	instr := instruction
	req.prefix, req.nmsgs, err = encodePrefix(f, mustJSON(openAIMessage{Role: "system", Content: &instr}), func(m json.RawMessage) bool {
		var r struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(m, &r)
		return r.Role == "system" || r.Role == "developer"
	})
	return req, err
}

type openAIMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openAIToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func openAICalls(calls []controller.ToolCall, indexed bool) []openAIToolCall {
	out := make([]openAIToolCall, len(calls))
	for i, c := range calls {
		out[i].ID, out[i].Type = c.ID, "function"
		out[i].Function.Name, out[i].Function.Arguments = c.Name, c.Arguments
		if indexed {
			out[i].Index = &i
		}
	}
	return out
}

func (openAI) roundMessages(rounds []*round) ([]json.RawMessage, error) {
	var msgs []json.RawMessage
	for _, rd := range rounds {
		text := rd.historyText()
		a := openAIMessage{Role: "assistant", ToolCalls: openAICalls(rd.calls, false)}
		if text != "" || len(rd.calls) == 0 {
			a.Content = &text
		}
		msgs = append(msgs, mustJSON(a))
		for _, r := range rd.results {
			c := r.content
			msgs = append(msgs, mustJSON(openAIMessage{Role: "tool", ToolCallID: r.id, Content: &c}))
		}
		if user := userText(rd); user != "" {
			msgs = append(msgs, mustJSON(openAIMessage{Role: "user", Content: &user}))
		}
	}
	return msgs, nil
}

// openAIToolJSON is the tool's definition, encoded once: it is the
// largest thing the proxy adds to every request.
var openAIToolJSON = sync.OnceValue(func() json.RawMessage { return mustJSON(protocol.WritePlanToolBegin()) })

// userText is what the proxy says to the model after a round, beyond the
// tool results.
func userText(rd *round) string {
	return strings.Join(append(append([]string(nil), rd.prompts...), rd.summaries...), "\n\n")
}

// openAIChunk is the part of a stream chunk the proxy reads for itself;
// the controller reads the rest.
type openAIChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func (openAI) read(ctx context.Context, body io.Reader, rd *round, feed func(string) error, out agentWriter) error {
	lr := newLineReader(body, out.flush)
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if data, ok := sseData(line); ok && strings.HasPrefix(data, "{") {
			var ch openAIChunk
			if json.Unmarshal([]byte(data), &ch) == nil {
				if rd.id == "" {
					rd.id, rd.model = ch.ID, ch.Model
				}
				for _, c := range ch.Choices {
					if c.Index == 0 && c.Delta.Content != nil {
						rd.addText(*c.Delta.Content)
					}
				}
				if len(ch.Usage) > 0 && string(ch.Usage) != "null" {
					addUsage(rd.usage, ch.Usage)
				}
			}
		}
		if err := feed(line); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (openAI) errorJSON(kind, msg string) []byte {
	return mustJSON(map[string]any{"error": map[string]any{
		"message": msg, "type": kind, "param": nil, "code": kind}})
}

func (openAI) newWriter(w http.ResponseWriter, req *agentRequest) agentWriter {
	return &openAIWriter{sse: sse{w: w}, req: req,
		id: "chatcmpl-orion-" + strings.ReplaceAll(uuid.NewString(), "-", ""), created: time.Now().Unix()}
}

// openAIWriter writes a chat.completion, or its chunks as they come.
type openAIWriter struct {
	sse
	req     *agentRequest
	id      string
	created int64
	// model is the upstream's name for the model, once known.
	model string
	buf   strings.Builder
	calls []controller.ToolCall
}

func (o *openAIWriter) modelName() string {
	if o.model != "" {
		return o.model
	}
	return o.req.model
}

// chatChunk is a chat.completion.chunk with one choice; a struct, not a
// map, since one is encoded per delta.
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        any     `json:"delta"`
	FinishReason *string `json:"finish_reason"`
	Logprobs     any     `json:"logprobs"`
}

type contentDelta struct {
	Content string `json:"content"`
}

func (o *openAIWriter) chunkLocked(delta any, finish *string) {
	ch := chatChunk{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.modelName(),
		Choices: []chunkChoice{{Delta: delta, FinishReason: finish}}}
	o.sendLocked("", mustJSON(ch))
}

func (o *openAIWriter) begin(rd *round) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started || !o.req.stream {
		return
	}
	o.chunkLocked(map[string]any{"role": "assistant", "content": ""}, nil)
}

func (o *openAIWriter) text(s string) {
	if s == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.noteText(s)
	if !o.req.stream {
		if o.keep(len(s)) {
			o.buf.WriteString(s)
		}
		return
	}
	o.chunkLocked(contentDelta{Content: s}, nil)
}

func (o *openAIWriter) toolCalls(calls []controller.ToolCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, calls...)
	if o.req.stream && len(calls) > 0 {
		o.chunkLocked(map[string]any{"tool_calls": openAICalls(calls, true)}, nil)
	}
}

func (o *openAIWriter) finish(reason string) string {
	switch {
	case len(o.calls) > 0:
		return "tool_calls"
	case reason == "" || reason == controller.FinishInterrupted || reason == "tool_calls":
		return "stop"
	}
	return reason
}

func (o *openAIWriter) usageJSON(u map[string]int64) map[string]int64 {
	out := map[string]int64{"prompt_tokens": u["prompt_tokens"], "completion_tokens": u["completion_tokens"]}
	out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
	return out
}

func (o *openAIWriter) end(reason string, usage map[string]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fr := o.finish(reason)
	if !o.req.stream && o.overflow {
		o.buf.Reset()
		o.replyLocked(http.StatusBadGateway, overflowJSON(openAI{}))
		return
	}
	if !o.req.stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		if o.buf.Len() > 0 || len(o.calls) == 0 {
			msg["content"] = o.buf.String()
		}
		if len(o.calls) > 0 {
			msg["tool_calls"] = openAICalls(o.calls, false)
		}
		o.replyLocked(http.StatusOK, mustJSON(map[string]any{
			"id": o.id, "object": "chat.completion", "created": o.created, "model": o.modelName(),
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": fr, "logprobs": nil}},
			"usage":   o.usageJSON(usage),
		}))
		return
	}
	o.chunkLocked(map[string]any{}, &fr)
	if o.req.includeUsage {
		o.sendLocked("", mustJSON(map[string]any{
			"id": o.id, "object": "chat.completion.chunk", "created": o.created, "model": o.modelName(),
			"choices": []any{}, "usage": o.usageJSON(usage)}))
	}
	o.doneLocked()
}

// doneLocked ends the stream with the sentinel the OpenAI SDKs stop at.
func (o *openAIWriter) doneLocked() {
	o.sendLocked("", []byte("[DONE]"))
	o.closed = true
}

func (o *openAIWriter) fail(status int, body []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failLocked(status, body) {
		o.sendLocked("", streamErrorBody(openAI{}, "upstream_error", status, body))
		o.doneLocked()
	}
}
