package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/protocol"
)

const dialectResponses = "responses"

// responses is OpenAI's Responses API (/v1/responses), the only one
// Codex CLI speaks. Its conversation is the "input" array of items; the
// proxy's rounds add items after the agent's, so a request with
// "store": false (Codex sends the whole input each turn) and one with
// previous_response_id (the upstream holds the earlier turns) are served
// alike.
type responses struct{}

func (responses) name() string { return dialectResponses }

func (responses) prepare(body []byte) (*agentRequest, error) {
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
	switch in := f["input"]; {
	case len(in) == 0 || string(in) == "null":
		delete(f, "input")
	case in[0] == '"':
		// A string input is one user message.
		f["input"] = mustJSON([]any{map[string]any{"role": "user", "content": json.RawMessage(in)}})
	case in[0] != '[':
		return nil, fmt.Errorf("input: want a string or an array of items")
	}
	f["stream"] = json.RawMessage("true")
	f["tools"] = mustJSON(append(dec.tools, responsesToolJSON()))
	// The instruction is appended to the agent's instructions, which
	// Codex fills with its own system prompt.
	var instr string
	if raw, ok := f["instructions"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &instr); err != nil {
			return nil, fmt.Errorf("instructions: want a string: %v", err)
		}
		instr += "\n\n"
	}
	f["instructions"] = mustJSON(instr + instruction)
	req.prefix, req.nmsgs, err = encodePrefixAt(f, "input", nil, nil)
	return req, err
}

// responsesToolJSON is the tool's definition in the Responses API's flat
// shape.
var responsesToolJSON = sync.OnceValue(func() json.RawMessage {
	d := protocol.WritePlanToolBegin()
	return mustJSON(map[string]any{"type": "function", "name": d.Function.Name,
		"description": d.Function.Description, "parameters": d.Function.Parameters, "strict": false})
})

func (responses) roundMessages(rounds []*round) ([]json.RawMessage, error) {
	var items []json.RawMessage
	for _, rd := range rounds {
		items = append(items, rd.blocks...)
		if t := rd.historyText(); t != "" {
			items = append(items, mustJSON(map[string]any{"type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": t, "annotations": []any{}}}}))
		}
		for _, c := range rd.calls {
			items = append(items, mustJSON(map[string]any{"type": "function_call", "call_id": c.ID,
				"name": c.Name, "arguments": c.Arguments}))
		}
		for _, r := range rd.results {
			items = append(items, mustJSON(map[string]any{"type": "function_call_output", "call_id": r.id, "output": r.content}))
		}
		if t := userText(rd); t != "" {
			items = append(items, mustJSON(map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": t}}}))
		}
	}
	return items, nil
}

// responsesEvent is one event of a Responses stream, the members the
// proxy reads.
type responsesEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    json.RawMessage `json:"response"`
}

type responsesItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Input     string `json:"input"`
}

// read translates a Responses stream into chat-completion chunks for the
// controller: output text deltas into content, function and custom tool
// calls (with their argument or input deltas) into tool_calls by output
// index, the completed response into finish_reason and [DONE]. Reasoning
// items are kept for the next round's input; they are not the agent's.
func (responses) read(ctx context.Context, body io.Reader, rd *round, feed func(string) error, out agentWriter) error {
	rw, _ := out.(*responsesWriter)
	ctl := controllerFeed(feed)
	calls := 0
	return eachData(ctx, body, out.flush, func(data string) error {
		var ev responsesEvent
		if json.Unmarshal([]byte(data), &ev) != nil {
			return nil
		}
		var ferr error
		switch ev.Type {
		case "response.created":
			var r struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			}
			_ = json.Unmarshal(ev.Response, &r)
			rd.id, rd.model = r.ID, r.Model
		case "response.output_item.added":
			var it responsesItem
			_ = json.Unmarshal(ev.Item, &it)
			switch it.Type {
			case "function_call":
				calls++
				ferr = ctl.chunk(toolChunk(ev.OutputIndex, it.CallID, it.Name, it.Arguments))
			case "custom_tool_call":
				calls++
				if rw != nil {
					rw.markCustom(it.CallID)
				}
				ferr = ctl.chunk(toolChunk(ev.OutputIndex, it.CallID, it.Name, it.Input))
			}
		case "response.output_text.delta":
			rd.addText(ev.Delta)
			ferr = ctl.chunk(contentChunk(ev.Delta))
		case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			ferr = ctl.chunk(toolChunk(ev.OutputIndex, "", "", ev.Delta))
		case "response.output_item.done":
			var it responsesItem
			_ = json.Unmarshal(ev.Item, &it)
			if it.Type == "reasoning" {
				rd.blocks = append(rd.blocks, withoutID(ev.Item))
			}
		case "response.completed", "response.incomplete":
			var r struct {
				ID         string          `json:"id"`
				Usage      json.RawMessage `json:"usage"`
				Incomplete struct {
					Reason string `json:"reason"`
				} `json:"incomplete_details"`
			}
			_ = json.Unmarshal(ev.Response, &r)
			if r.ID != "" {
				rd.id = r.ID
			}
			addUsage(rd.usage, r.Usage)
			fr := "stop"
			switch {
			case r.Incomplete.Reason == "max_output_tokens":
				fr = "length"
			case calls > 0:
				fr = "tool_calls"
			}
			rd.stopReason = fr
			if ferr = ctl.finish(fr); ferr == nil {
				ferr = ctl.done()
			}
		case "response.failed", "error":
			rd.streamErr = []byte(data)
		}
		if rw != nil && rd.id != "" {
			rw.noteUpstream(rd.id)
		}
		return ferr
	})
}

// withoutID drops an item's id: an item sent back with its id refers to
// a stored response, which a "store": false request has none of.
func withoutID(item json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(item, &m) != nil {
		return item
	}
	delete(m, "id")
	delete(m, "status")
	return mustJSON(m)
}

func (responses) errorJSON(kind, msg string) []byte {
	return openAI{}.errorJSON(kind, msg)
}

func (responses) newWriter(w http.ResponseWriter, req *agentRequest) agentWriter {
	return &responsesWriter{sse: sse{w: w}, req: req, created: time.Now().Unix(), msg: -1,
		id: "resp_orion_" + strings.ReplaceAll(uuid.NewString(), "-", ""), custom: map[string]bool{}}
}

// responsesWriter writes a response object, or its response.* events as
// they come. The output items the agent sees are numbered by the writer:
// the inner rounds' items are not the agent's.
type responsesWriter struct {
	sse
	req     *agentRequest
	id      string
	created int64
	seq     int
	// upstream is the last upstream response's id: the agent gets it in
	// the completed response, so that a previous_response_id on its next
	// request names a stored response holding the whole turn, the
	// proxy's rounds included.
	upstream string
	// output holds the items sent so far; msg is the index of the message
	// item being streamed (-1: none), text its text.
	output  []any
	msg     int
	msgText strings.Builder
	msgID   string
	// custom says which call ids are custom (freeform) tool calls, whose
	// input is raw text rather than JSON arguments.
	custom map[string]bool
	calls  bool
}

func (r *responsesWriter) markCustom(callID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.custom[callID] = true
}

func (r *responsesWriter) noteUpstream(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.upstream = id
}

func (r *responsesWriter) eventLocked(typ string, m map[string]any) {
	m["type"] = typ
	m["sequence_number"] = r.seq
	r.seq++
	r.sendLocked(typ, mustJSON(m))
}

func (r *responsesWriter) responseLocked(status string) map[string]any {
	id := r.id
	if status != "in_progress" && r.upstream != "" {
		id = r.upstream
	}
	out := r.output
	if out == nil {
		out = []any{}
	}
	return map[string]any{"id": id, "object": "response", "created_at": r.created, "status": status,
		"model": r.req.model, "output": out}
}

func (r *responsesWriter) begin(rd *round) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || !r.req.stream {
		return
	}
	r.eventLocked("response.created", map[string]any{"response": r.responseLocked("in_progress")})
	r.eventLocked("response.in_progress", map[string]any{"response": r.responseLocked("in_progress")})
}

func (r *responsesWriter) messageItemLocked(status string) map[string]any {
	return map[string]any{"type": "message", "id": r.msgID, "role": "assistant", "status": status,
		"content": []any{map[string]any{"type": "output_text", "text": r.msgText.String(), "annotations": []any{}}}}
}

func (r *responsesWriter) text(s string) {
	if s == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteText(s)
	if !r.req.stream && !r.keep(len(s)) {
		return
	}
	if r.msg < 0 {
		r.msg = len(r.output)
		r.msgID = "msg_orion_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		r.output = append(r.output, nil)
		r.msgText.Reset()
		if r.req.stream {
			r.eventLocked("response.output_item.added", map[string]any{"output_index": r.msg, "item": map[string]any{
				"type": "message", "id": r.msgID, "role": "assistant", "status": "in_progress", "content": []any{}}})
			r.eventLocked("response.content_part.added", map[string]any{"item_id": r.msgID, "output_index": r.msg,
				"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		}
	}
	r.msgText.WriteString(s)
	if r.req.stream {
		r.eventLocked("response.output_text.delta", map[string]any{"item_id": r.msgID, "output_index": r.msg,
			"content_index": 0, "delta": s})
	}
}

// closeMessageLocked ends the message item being streamed.
func (r *responsesWriter) closeMessageLocked() {
	if r.msg < 0 {
		return
	}
	item := r.messageItemLocked("completed")
	r.output[r.msg] = item
	if r.req.stream {
		t := r.msgText.String()
		r.eventLocked("response.output_text.done", map[string]any{"item_id": r.msgID, "output_index": r.msg,
			"content_index": 0, "text": t})
		r.eventLocked("response.content_part.done", map[string]any{"item_id": r.msgID, "output_index": r.msg,
			"content_index": 0, "part": map[string]any{"type": "output_text", "text": t, "annotations": []any{}}})
		r.eventLocked("response.output_item.done", map[string]any{"output_index": r.msg, "item": item})
	}
	r.msg = -1
	r.msgText.Reset()
}

func (r *responsesWriter) toolCalls(calls []controller.ToolCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeMessageLocked()
	for _, c := range calls {
		r.calls = true
		idx := len(r.output)
		itemID := "fc_orion_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		var item map[string]any
		var added map[string]any
		deltaType, doneType, member := "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
		if r.custom[c.ID] {
			deltaType, doneType, member = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
			item = map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": c.ID, "name": c.Name, "input": c.Arguments, "status": "completed"}
			added = map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": c.ID, "name": c.Name, "input": "", "status": "in_progress"}
		} else {
			item = map[string]any{"type": "function_call", "id": itemID, "call_id": c.ID, "name": c.Name, "arguments": c.Arguments, "status": "completed"}
			added = map[string]any{"type": "function_call", "id": itemID, "call_id": c.ID, "name": c.Name, "arguments": "", "status": "in_progress"}
		}
		r.output = append(r.output, item)
		if !r.req.stream {
			continue
		}
		r.eventLocked("response.output_item.added", map[string]any{"output_index": idx, "item": added})
		r.eventLocked(deltaType, map[string]any{"item_id": itemID, "output_index": idx, "delta": c.Arguments})
		r.eventLocked(doneType, map[string]any{"item_id": itemID, "output_index": idx, member: c.Arguments})
		r.eventLocked("response.output_item.done", map[string]any{"output_index": idx, "item": item})
	}
}

func responsesUsage(u map[string]int64) map[string]any {
	in, out := u["input_tokens"], u["output_tokens"]
	return map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
		"input_tokens_details": map[string]int64{"cached_tokens": 0}, "output_tokens_details": map[string]int64{"reasoning_tokens": 0}}
}

func (r *responsesWriter) end(finish string, usage map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.req.stream && r.overflow {
		r.replyLocked(http.StatusBadGateway, overflowJSON(responses{}))
		return
	}
	r.closeMessageLocked()
	status, typ := "completed", "response.completed"
	if finish == "length" && !r.calls {
		status, typ = "incomplete", "response.incomplete"
	}
	resp := r.responseLocked(status)
	resp["usage"] = responsesUsage(usage)
	if status == "incomplete" {
		resp["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	}
	if !r.req.stream {
		r.replyLocked(http.StatusOK, mustJSON(resp))
		return
	}
	r.eventLocked(typ, map[string]any{"response": resp})
	r.closed = true
}

func (r *responsesWriter) fail(status int, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failLocked(status, body) {
		return
	}
	var e struct {
		Error struct {
			Code    any    `json:"code"`
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Error.Message == "" {
		e.Error.Message = fmt.Sprintf("status %d: %s", status, body)
	}
	code := fmt.Sprint(e.Error.Code)
	if e.Error.Code == nil {
		code = e.Error.Type
	}
	if code == "" {
		// A body that is not JSON names no code; clients switch on it.
		code = "upstream_error"
	}
	if r.msg >= 0 && r.output[r.msg] == nil {
		// The message cut by the failure is reported as far as it went,
		// never as a null item that clients cannot read.
		r.output[r.msg] = r.messageItemLocked("incomplete")
	}
	resp := r.responseLocked("failed")
	resp["error"] = map[string]string{"code": code, "message": e.Error.Message}
	r.eventLocked("response.failed", map[string]any{"response": resp})
	r.closed = true
}
