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

	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/protocol"
)

const dialectGemini = "gemini"

// DefaultGeminiUpstream is the Gemini API's base URL (the SDKs add
// /v1beta/models/...).
const DefaultGeminiUpstream = "https://generativelanguage.googleapis.com"

// gemini is the Gemini API (generateContent and streamGenerateContent),
// which Gemini CLI speaks. Function calls arrive whole, in one part each;
// their ids are optional, so the proxy numbers those that have none and
// gives the agent its calls without them.
type gemini struct{}

func (gemini) name() string { return dialectGemini }

// isGeminiChat says whether a path is one of the two chat methods.
func isGeminiChat(path string) bool {
	return strings.HasPrefix(path, "/v1beta/models/") &&
		(strings.HasSuffix(path, ":streamGenerateContent") || strings.HasSuffix(path, ":generateContent"))
}

// streamPath is the upstream path and query of a chat request: always the
// streamed method, as server-sent events, so that the loop acts as text
// arrives; and whether the agent asked for a stream.
func (gemini) streamPath(path, query string) (string, string, bool) {
	stream := strings.HasSuffix(path, ":streamGenerateContent")
	if !stream {
		path = strings.TrimSuffix(path, ":generateContent") + ":streamGenerateContent"
	}
	q := []string{"alt=sse"}
	for _, kv := range strings.Split(query, "&") {
		if kv != "" && !strings.HasPrefix(kv, "alt=") {
			q = append(q, kv)
		}
	}
	return path, strings.Join(q, "&"), stream
}

func (gemini) prepare(body []byte) (*agentRequest, error) {
	req, dec, err := decodeRequest(body, func(t json.RawMessage) string {
		var d struct {
			Decls []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		}
		_ = json.Unmarshal(t, &d)
		for _, f := range d.Decls {
			if f.Name == protocol.ToolName {
				return f.Name
			}
		}
		return ""
	})
	if err != nil || req.carries {
		return req, err
	}
	f := dec.fields
	if c, ok := f["contents"]; ok && string(c) != "null" && c[0] != '[' {
		return nil, fmt.Errorf("contents: want an array")
	}
	// The tool joins the agent's first function declarations.
	tools := dec.tools
	added := false
	for i, t := range tools {
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) != nil {
			continue
		}
		if decls, ok := m["functionDeclarations"]; ok {
			var list []json.RawMessage
			if json.Unmarshal(decls, &list) != nil {
				continue
			}
			m["functionDeclarations"] = mustJSON(append(list, geminiToolJSON()))
			tools[i] = mustJSON(m)
			added = true
			break
		}
	}
	if !added {
		tools = append(tools, mustJSON(map[string]any{"functionDeclarations": []any{geminiToolJSON()}}))
	}
	f["tools"] = mustJSON(tools)
	// The instruction is one more part of the system instruction.
	sys := map[string]json.RawMessage{}
	if raw, ok := f["systemInstruction"]; ok && string(raw) != "null" {
		if raw[0] == '"' {
			sys["parts"] = mustJSON([]any{map[string]json.RawMessage{"text": raw}})
		} else if err := json.Unmarshal(raw, &sys); err != nil {
			return nil, fmt.Errorf("systemInstruction: want a content object: %v", err)
		}
	}
	var parts []json.RawMessage
	if p, ok := sys["parts"]; ok {
		if err := json.Unmarshal(p, &parts); err != nil {
			return nil, fmt.Errorf("systemInstruction.parts: want an array: %v", err)
		}
	}
	sys["parts"] = mustJSON(append(parts, mustJSON(map[string]string{"text": instruction})))
	f["systemInstruction"] = mustJSON(sys)
	req.prefix, req.nmsgs, err = encodePrefixAt(f, "contents", nil, nil)
	return req, err
}

var geminiToolJSON = sync.OnceValue(func() json.RawMessage {
	d := protocol.WritePlanToolBegin()
	return mustJSON(map[string]any{"name": d.Function.Name, "description": d.Function.Description,
		"parametersJsonSchema": d.Function.Parameters})
})

// generatedID marks a call id the proxy made up for a call that had none.
const generatedID = "orion_call_"

// geminiPart is the part of a Gemini part the proxy reads.
type geminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

func (gemini) roundMessages(rounds []*round) ([]json.RawMessage, error) {
	var contents []json.RawMessage
	for _, rd := range rounds {
		var model []json.RawMessage
		var calls []json.RawMessage
		for _, b := range rd.blocks {
			var p geminiPart
			_ = json.Unmarshal(b, &p)
			switch {
			case p.FunctionCall != nil && p.FunctionCall.Name == protocol.ToolName:
				calls = append(calls, b)
			case p.FunctionCall == nil:
				model = append(model, b)
			}
		}
		if t := rd.historyText(); t != "" {
			model = append(model, mustJSON(map[string]string{"text": t}))
		}
		model = append(model, calls...)
		if len(model) > 0 {
			contents = append(contents, mustJSON(map[string]any{"role": "model", "parts": model}))
		}
		var user []any
		for _, r := range rd.results {
			fr := map[string]any{"name": protocol.ToolName, "response": map[string]string{"output": r.content}}
			if !strings.HasPrefix(r.id, generatedID) {
				fr["id"] = r.id
			}
			user = append(user, map[string]any{"functionResponse": fr})
		}
		if t := userText(rd); t != "" {
			user = append(user, map[string]string{"text": t})
		}
		if len(user) > 0 {
			contents = append(contents, mustJSON(map[string]any{"role": "user", "parts": user}))
		}
	}
	return contents, nil
}

// geminiChunk is one chunk of a streamed reply.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	Usage      json.RawMessage `json:"usageMetadata"`
	ResponseID string          `json:"responseId"`
	Model      string          `json:"modelVersion"`
	Error      json.RawMessage `json:"error"`
}

// read translates a Gemini stream into chat-completion chunks for the
// controller: text parts into content, each functionCall part into a
// whole tool call, finishReason into finish_reason and [DONE]. Thought
// parts and the calls' own parts (with their thought signatures) are kept
// for the next round's contents.
func (gemini) read(ctx context.Context, body io.Reader, rd *round, feed func(string) error, out agentWriter) error {
	gw, _ := out.(*geminiWriter)
	ctl := controllerFeed(feed)
	calls := 0
	finished := false
	// A stream that ends without a finishReason is not an error here: the
	// controller treats the reply as cut off (EndOfStream).
	return eachData(ctx, body, out.flush, func(data string) error {
		if !strings.HasPrefix(data, "{") {
			return nil
		}
		var ch geminiChunk
		if json.Unmarshal([]byte(data), &ch) != nil {
			return nil
		}
		if len(ch.Error) > 0 {
			rd.streamErr = []byte(data)
			return nil
		}
		if rd.id == "" {
			rd.id, rd.model = ch.ResponseID, ch.Model
		}
		if len(ch.Usage) > 0 {
			var u struct {
				Prompt     int64 `json:"promptTokenCount"`
				Candidates int64 `json:"candidatesTokenCount"`
			}
			_ = json.Unmarshal(ch.Usage, &u)
			rd.usage["input_tokens"], rd.usage["output_tokens"] = u.Prompt, u.Candidates
		}
		if len(ch.Candidates) == 0 {
			return nil
		}
		c := ch.Candidates[0]
		for _, raw := range c.Content.Parts {
			var p geminiPart
			if json.Unmarshal(raw, &p) != nil {
				continue
			}
			var ferr error
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = fmt.Sprintf("%s%d_%d", generatedID, time.Now().UnixNano(), calls)
					var m map[string]json.RawMessage
					_ = json.Unmarshal(raw, &m)
					fc := map[string]json.RawMessage{}
					_ = json.Unmarshal(m["functionCall"], &fc)
					fc["id"] = mustJSON(id)
					m["functionCall"] = mustJSON(fc)
					raw = mustJSON(m)
				}
				rd.blocks = append(rd.blocks, raw)
				if gw != nil {
					gw.keepPart(id, raw)
				}
				args := string(p.FunctionCall.Args)
				if args == "" || args == "null" {
					args = "{}"
				}
				ferr = ctl.chunk(toolChunk(calls, id, p.FunctionCall.Name, args))
				calls++
			case p.Thought:
				rd.blocks = append(rd.blocks, raw)
			case p.Text != nil && *p.Text != "":
				rd.addText(*p.Text)
				ferr = ctl.chunk(contentChunk(*p.Text))
			}
			if ferr != nil {
				return ferr
			}
		}
		if c.FinishReason != "" && !finished {
			finished = true
			fr := "stop"
			switch {
			case c.FinishReason == "MAX_TOKENS":
				fr = "length"
			case calls > 0:
				fr = "tool_calls"
			}
			rd.stopReason = c.FinishReason
			if err := ctl.finish(fr); err != nil {
				return err
			}
			return ctl.done()
		}
		return nil
	})
}

func (gemini) errorJSON(kind, msg string) []byte {
	code, status := http.StatusInternalServerError, "INTERNAL"
	switch kind {
	case "invalid_request_error":
		code, status = http.StatusBadRequest, "INVALID_ARGUMENT"
	case "not_found":
		code, status = http.StatusNotFound, "NOT_FOUND"
	case "rate_limit_error":
		code, status = http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
	case "oriond_unreachable":
		code, status = http.StatusServiceUnavailable, "UNAVAILABLE"
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

func (gemini) newWriter(w http.ResponseWriter, req *agentRequest) agentWriter {
	return &geminiWriter{sse: sse{w: w, crlf: true}, req: req, parts: map[string]json.RawMessage{}}
}

// geminiWriter writes a GenerateContentResponse, or its chunks as they
// come.
type geminiWriter struct {
	sse
	req *agentRequest
	// parts are the upstream's own parts of the calls the agent may get,
	// by id: given back as they came (thought signatures included), the
	// proxy's made-up ids taken out.
	parts map[string]json.RawMessage
	// all is every part, for a response that is not streamed.
	all   []any
	calls bool
}

func (g *geminiWriter) keepPart(id string, raw json.RawMessage) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.parts[id] = raw
}

func (g *geminiWriter) chunkLocked(parts []any, finish string, usage map[string]int64) {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	v := map[string]any{"candidates": []any{cand}, "modelVersion": g.req.model}
	if usage != nil {
		v["usageMetadata"] = geminiUsage(usage)
	}
	g.sendLocked("", mustJSON(v))
}

func geminiUsage(u map[string]int64) map[string]int64 {
	return map[string]int64{"promptTokenCount": u["input_tokens"], "candidatesTokenCount": u["output_tokens"],
		"totalTokenCount": u["input_tokens"] + u["output_tokens"]}
}

func (g *geminiWriter) begin(rd *round) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.req.model == "" && rd.model != "" {
		g.req.model = rd.model
	}
}

func (g *geminiWriter) text(s string) {
	if s == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteText(s)
	if !g.req.stream {
		if g.keep(len(s)) {
			g.all = append(g.all, map[string]string{"text": s})
		}
		return
	}
	g.chunkLocked([]any{map[string]string{"text": s}}, "", nil)
}

func (g *geminiWriter) toolCalls(calls []controller.ToolCall) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var parts []any
	for _, c := range calls {
		g.calls = true
		part := g.parts[c.ID]
		if part == nil {
			args := json.RawMessage(c.Arguments)
			if !json.Valid(args) {
				args = json.RawMessage("{}")
			}
			part = mustJSON(map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": args}})
		}
		if strings.HasPrefix(c.ID, generatedID) {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(part, &m)
			fc := map[string]json.RawMessage{}
			_ = json.Unmarshal(m["functionCall"], &fc)
			delete(fc, "id")
			m["functionCall"] = mustJSON(fc)
			part = mustJSON(m)
		}
		parts = append(parts, part)
	}
	if !g.req.stream {
		g.all = append(g.all, parts...)
		return
	}
	if len(parts) > 0 {
		g.chunkLocked(parts, "", nil)
	}
}

func (g *geminiWriter) end(finish string, usage map[string]int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fr := "STOP"
	if finish == "length" && !g.calls {
		fr = "MAX_TOKENS"
	}
	if !g.req.stream {
		if g.overflow {
			g.replyLocked(http.StatusBadGateway, overflowJSON(gemini{}))
			return
		}
		parts := g.all
		if parts == nil {
			parts = []any{}
		}
		g.replyLocked(http.StatusOK, mustJSON(map[string]any{"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": parts}, "finishReason": fr, "index": 0}},
			"usageMetadata": geminiUsage(usage), "modelVersion": g.req.model}))
		return
	}
	g.chunkLocked([]any{map[string]string{"text": ""}}, fr, usage)
	g.closed = true
}

func (g *geminiWriter) fail(status int, body []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failLocked(status, body) {
		g.sendLocked("", streamErrorBody(gemini{}, "api_error", status, body))
		g.closed = true
	}
}
