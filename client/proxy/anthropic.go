package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/protocol"
)

// anthropic is the Messages API.
type anthropic struct{}

func (anthropic) name() string { return dialectAnthropic }

func (anthropic) prepare(body []byte) (*agentRequest, error) {
	req, dec, err := decodeRequest(body, func(t json.RawMessage) string {
		var d struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &d)
		return d.Name
	})
	if err != nil || req.carries {
		return req, err
	}
	f := dec.fields
	f["stream"] = json.RawMessage("true")
	f["tools"] = mustJSON(append(dec.tools, anthropicToolJSON()))
	// The instruction is appended to the system prompt: a string stays a
	// string, and blocks get one more block after the agent's own (and
	// their cache breakpoints).
	switch sys := f["system"]; {
	case len(sys) == 0 || string(sys) == "null":
		f["system"] = mustJSON(instruction)
	case sys[0] == '"':
		var s string
		_ = json.Unmarshal(sys, &s)
		f["system"] = mustJSON(s + "\n\n" + instruction)
	default:
		var blocks []json.RawMessage
		if err := json.Unmarshal(sys, &blocks); err != nil {
			return nil, fmt.Errorf("system: want a string or an array of blocks: %v", err)
		}
		f["system"] = mustJSON(append(blocks, mustJSON(map[string]string{"type": "text", "text": instruction})))
	}
	req.prefix, req.nmsgs, err = encodePrefix(f, nil, nil)
	return req, err
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

func (anthropic) roundMessages(rounds []*round) ([]json.RawMessage, error) {
	var msgs []json.RawMessage
	for _, rd := range rounds {
		var a []any
		for _, b := range rd.blocks {
			a = append(a, b)
		}
		if t := rd.historyText(); t != "" {
			a = append(a, map[string]string{"type": "text", "text": t})
		}
		for _, c := range rd.calls {
			input := json.RawMessage(c.Arguments)
			var obj map[string]json.RawMessage
			if json.Unmarshal(input, &obj) != nil || obj == nil {
				// The controller told the model what was wrong with
				// them; the API wants an object here.
				input = json.RawMessage("{}")
			}
			a = append(a, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		}
		// The API joins consecutive turns of one role, so an empty
		// response needs no message of its own.
		if len(a) > 0 {
			msgs = append(msgs, mustJSON(anthropicMessage{Role: "assistant", Content: a}))
		}
		var u []any
		for _, r := range rd.results {
			u = append(u, map[string]string{"type": "tool_result", "tool_use_id": r.id, "content": r.content})
		}
		if t := userText(rd); t != "" {
			u = append(u, map[string]string{"type": "text", "text": t})
		}
		if len(u) > 0 {
			msgs = append(msgs, mustJSON(anthropicMessage{Role: "user", Content: u}))
		}
	}
	return msgs, nil
}

// anthropicToolJSON is the tool's definition, encoded once.
var anthropicToolJSON = sync.OnceValue(func() json.RawMessage { return mustJSON(protocol.WritePlanToolBeginAnthropic()) })

// anthropicEvent is one event of a Messages stream.
type anthropicEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

type anthropicDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// finishFor maps a stop_reason to the finish_reason the controller knows.
func finishFor(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	}
	return "stop"
}

// read translates a Messages stream into chat-completion chunks for the
// controller: text_delta into content, tool_use blocks and their
// input_json_delta fragments into tool_calls by block index, stop_reason
// into finish_reason, message_stop into [DONE]. Thinking blocks are not
// the controller's: they go to the agent and into the history as they are.
func (anthropic) read(ctx context.Context, body io.Reader, rd *round, feed func(string) error, out agentWriter) error {
	aw, _ := out.(*anthropicWriter)
	ctl := controllerFeed(feed)
	var thinking *anthropicBlock
	return eachData(ctx, body, out.flush, func(data string) error {
		var ev anthropicEvent
		if json.Unmarshal([]byte(data), &ev) != nil {
			return nil
		}
		var ferr error
		switch ev.Type {
		case "message_start":
			var m struct {
				ID    string          `json:"id"`
				Model string          `json:"model"`
				Usage json.RawMessage `json:"usage"`
			}
			_ = json.Unmarshal(ev.Message, &m)
			rd.id, rd.model = m.ID, m.Model
			addUsage(rd.usage, m.Usage)
		case "content_block_start":
			var b anthropicBlock
			_ = json.Unmarshal(ev.ContentBlock, &b)
			switch b.Type {
			case "text":
				if b.Text != "" {
					rd.addText(b.Text)
					ferr = ctl.chunk(contentChunk(b.Text))
				}
			case "tool_use":
				args := ""
				if len(b.Input) > 0 && string(b.Input) != "{}" {
					args = string(b.Input)
				}
				ferr = ctl.chunk(toolChunk(ev.Index, b.ID, b.Name, args))
			case "thinking", "redacted_thinking":
				thinking = &b
				if aw != nil {
					aw.passStart(ev.ContentBlock)
				}
			}
		case "content_block_delta":
			var d anthropicDelta
			_ = json.Unmarshal(ev.Delta, &d)
			switch d.Type {
			case "text_delta":
				rd.addText(d.Text)
				ferr = ctl.chunk(contentChunk(d.Text))
			case "input_json_delta":
				ferr = ctl.chunk(toolChunk(ev.Index, "", "", d.PartialJSON))
			case "thinking_delta", "signature_delta":
				if thinking != nil {
					thinking.Thinking += d.Thinking
					thinking.Signature += d.Signature
				}
				if aw != nil {
					aw.passDelta(ev.Delta)
				}
			}
		case "content_block_stop":
			if thinking != nil {
				full := thinkingJSON(thinking)
				rd.blocks = append(rd.blocks, full)
				if aw != nil {
					aw.passStop(full)
				}
				thinking = nil
			}
		case "message_delta":
			var d anthropicDelta
			_ = json.Unmarshal(ev.Delta, &d)
			if d.StopReason != "" {
				rd.stopReason = d.StopReason
				fr := finishFor(d.StopReason)
				ferr = ctl.finish(fr)
			}
			addUsage(rd.usage, ev.Usage)
		case "message_stop":
			ferr = ctl.done()
		case "error":
			rd.streamErr = []byte(data)
		}
		return ferr
	})
}

func thinkingJSON(b *anthropicBlock) json.RawMessage {
	if b.Type == "redacted_thinking" {
		return mustJSON(map[string]string{"type": b.Type, "data": b.Data})
	}
	return mustJSON(map[string]string{"type": b.Type, "thinking": b.Thinking, "signature": b.Signature})
}

func contentChunk(s string) any {
	return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}}}}
}

func toolChunk(index int, id, name, args string) any {
	call := map[string]any{"index": index, "function": map[string]string{"name": name, "arguments": args}}
	if id != "" {
		call["id"] = id
	}
	return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{call}}}}}
}

// errorJSON maps the proxy's error kinds onto Anthropic's error types,
// which the SDKs turn into their error classes.
func (anthropic) errorJSON(kind, msg string) []byte {
	t := map[string]string{"invalid_request_error": "invalid_request_error", "not_found": "not_found_error",
		"request_too_large": "request_too_large"}[kind]
	if t == "" {
		t = "api_error"
	}
	return mustJSON(map[string]any{"type": "error", "error": map[string]string{"type": t, "message": msg}})
}

func (anthropic) newWriter(w http.ResponseWriter, req *agentRequest) agentWriter {
	return &anthropicWriter{sse: sse{w: w, ping: anthropicPing}, req: req, open: -1,
		id: "msg_orion_" + strings.ReplaceAll(uuid.NewString(), "-", "")}
}

// anthropicWriter writes a message, or its events as they come. It
// numbers the content blocks the agent sees itself: the inner rounds'
// blocks are not the agent's.
type anthropicWriter struct {
	sse
	req *agentRequest
	id  string
	// open is the index of the block being streamed (-1: none), openText
	// whether it is a text block, next the next index.
	open     int
	openText bool
	next     int
	// blocks is the whole message, for a response that is not streamed.
	blocks []any
	held   bool
}

// anthropicPing is the keep-alive event Anthropic's own server sends.
var anthropicPing = sseEvent(false, "ping", []byte(`{"type": "ping"}`))

func (a *anthropicWriter) eventLocked(name string, v any) {
	a.sendLocked(name, mustJSON(v))
}

func (a *anthropicWriter) begin(rd *round) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || !a.req.stream {
		return
	}
	a.eventLocked("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.req.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int64{"input_tokens": 0, "output_tokens": 0}}})
}

func (a *anthropicWriter) closeLocked() {
	if a.open >= 0 {
		a.eventLocked("content_block_stop", map[string]any{"type": "content_block_stop", "index": a.open})
		a.open, a.openText = -1, false
	}
}

func (a *anthropicWriter) startLocked(block any) {
	a.closeLocked()
	a.open = a.next
	a.next++
	a.eventLocked("content_block_start", map[string]any{"type": "content_block_start", "index": a.open, "content_block": block})
}

func (a *anthropicWriter) text(s string) {
	if s == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.noteText(s)
	if !a.req.stream {
		if !a.keep(len(s)) {
			return
		}
		if n := len(a.blocks); n > 0 {
			if t, ok := a.blocks[n-1].(*textBlock); ok {
				t.b.WriteString(s)
				return
			}
		}
		t := &textBlock{}
		t.b.WriteString(s)
		a.blocks = append(a.blocks, t)
		return
	}
	if !a.openText {
		a.startLocked(map[string]string{"type": "text", "text": ""})
		a.openText = true
	}
	a.eventLocked("content_block_delta", map[string]any{"type": "content_block_delta", "index": a.open,
		"delta": map[string]string{"type": "text_delta", "text": s}})
}

// textBlock is a text block of a response that is not streamed, grown in
// place as deltas come.
type textBlock struct{ b strings.Builder }

func (t *textBlock) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"type": "text", "text": t.b.String()})
}

// passStart, passDelta and passStop relay a thinking block unchanged but
// for its index; passStop has the whole block for an unstreamed reply.
func (a *anthropicWriter) passStart(block json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.req.stream {
		a.startLocked(block)
	}
}

func (a *anthropicWriter) passDelta(delta json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.req.stream && a.open >= 0 && !a.openText {
		a.eventLocked("content_block_delta", map[string]any{"type": "content_block_delta", "index": a.open, "delta": delta})
	}
}

func (a *anthropicWriter) passStop(full json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.req.stream {
		a.closeLocked()
		return
	}
	a.blocks = append(a.blocks, full)
}

func (a *anthropicWriter) toolCalls(calls []controller.ToolCall) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range calls {
		a.held = true
		args := c.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		if !a.req.stream {
			input := json.RawMessage(args)
			if !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			a.blocks = append(a.blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
			continue
		}
		a.startLocked(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}})
		a.eventLocked("content_block_delta", map[string]any{"type": "content_block_delta", "index": a.open,
			"delta": map[string]string{"type": "input_json_delta", "partial_json": args}})
		a.closeLocked()
	}
}

func (a *anthropicWriter) stopReason(finish string) string {
	switch {
	case a.held:
		return "tool_use"
	case finish == "length":
		return "max_tokens"
	}
	return "end_turn"
}

func anthropicUsage(u map[string]int64) map[string]int64 {
	out := map[string]int64{"input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"]}
	for _, k := range []string{"cache_creation_input_tokens", "cache_read_input_tokens"} {
		if v, ok := u[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (a *anthropicWriter) end(finish string, usage map[string]int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	stop := a.stopReason(finish)
	if !a.req.stream && a.overflow {
		a.blocks = nil
		a.replyLocked(http.StatusBadGateway, overflowJSON(anthropic{}))
		return
	}
	if !a.req.stream {
		if a.blocks == nil {
			a.blocks = []any{}
		}
		a.replyLocked(http.StatusOK, mustJSON(map[string]any{
			"id": a.id, "type": "message", "role": "assistant", "model": a.req.model, "content": a.blocks,
			"stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(usage)}))
		return
	}
	a.closeLocked()
	a.eventLocked("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": anthropicUsage(usage)})
	a.eventLocked("message_stop", map[string]string{"type": "message_stop"})
	a.closed = true
}

func (a *anthropicWriter) fail(status int, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failLocked(status, body) {
		a.sendLocked("error", streamErrorBody(anthropic{}, "api_error", status, body))
		a.closed = true
	}
}
