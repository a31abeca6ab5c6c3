package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/turnmark"
)

// newMarker is the proxy's turn marker, nil when Config.NoTurns.
func newMarker(cfg Config) *turnmark.Marker {
	if cfg.NoTurns {
		return nil
	}
	return turnmark.New(turnmark.Config{
		Dial: func(ctx context.Context) (*client.Client, error) {
			return cfg.Dial(ctx, cfg.Socket, client.Options{})
		},
		Agent:  cfg.Agent,
		Idle:   cfg.TurnIdle,
		Logger: cfg.Logger,
	})
}

// Close ends the turns still open (the agent exited mid-turn) and waits
// for oriond to record them.
func (p *Proxy) Close() {
	if p.turns != nil {
		p.turns.Close()
	}
}

// turnStart begins a turn in ws when the request carries the person's
// words: its last message is the user's own, not a tool's result (the
// agent going on with its work). Only a request that offers the model
// tools is the agent's own loop: an agent's side requests (a title, a
// quota probe, a summary) offer none and neither begin nor end a turn.
// It reports whether the request is the agent's loop.
func (p *Proxy) turnStart(ctx context.Context, r *http.Request, d dialect, ws string, body []byte) bool {
	if p.turns == nil {
		return false
	}
	if !offersTools(body) {
		p.log.Debug("turns: a side request (no tools)", "path", r.URL.Path)
		return false
	}
	if !personSpeaks(d, body) {
		p.log.Debug("turns: the agent goes on (a tool result)", "path", r.URL.Path)
		p.turns.Active(ws)
		return true
	}
	agent := p.cfg.Agent
	if agent == "" {
		agent = agentOf(r)
	}
	p.turns.Begin(ctx, ws, agent)
	return true
}

// turnDone ends ws's turn when the model's answer to the agent's loop
// handed back to the person (it asked for no tool); otherwise the agent
// goes on.
func (p *Proxy) turnDone(ws string, agentic, handedBack bool) {
	if p.turns == nil || !agentic {
		return
	}
	if handedBack {
		p.turns.End(ws)
		return
	}
	p.turns.Active(ws)
}

// agentOf names the agent of a shared proxy's request by its User-Agent's
// product ("claude-cli/1.0.3 (external, cli)" is claude-cli); exec's
// Config.Agent (the command) wins over it.
func agentOf(r *http.Request) string {
	ua := r.Header.Get("User-Agent")
	name, _, _ := strings.Cut(ua, "/")
	name, _, _ = strings.Cut(name, " ")
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// personSpeaks reports whether the request's last message is the
// person's. A tool result is the user's role in both APIs' messages
// (Anthropic: a tool_result block; OpenAI: role "tool"), so the role alone
// does not tell. Only the last message is decoded.
func personSpeaks(d dialect, body []byte) bool {
	switch d.name() {
	case dialectResponses:
		return personSpeaksResponses(body)
	case dialectGemini:
		return personSpeaksGemini(body)
	}
	last := lastMessage(body)
	if last == nil {
		return false
	}
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(last, &m) != nil || m.Role != "user" {
		return false
	}
	if d.name() != dialectAnthropic {
		return true
	}
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || c[0] != '[' {
		return true // a plain string is the person's
	}
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(c, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			return false
		}
	}
	return true
}

// offersTools reports whether the body's "tools" is a non-empty array.
func offersTools(body []byte) bool {
	t := member(body, "tools")
	t = bytes.TrimSpace(t)
	return len(t) > 2 && t[0] == '[' && len(bytes.TrimSpace(t[1:len(t)-1])) > 0
}

// member is the raw value of the body's top-level member name, or nil.
func member(body []byte, name string) json.RawMessage {
	keys, vals := splitJSON(bytes.TrimSpace(body))
	for i, k := range keys {
		var s string
		if json.Unmarshal(k, &s) == nil && s == name {
			return vals[i]
		}
	}
	return nil
}

// lastMessage is the raw last message of the body's "messages" that is
// not the agent's own instruction: Claude Code puts a "system" message
// (its environment) after the person's, and OpenAI's "developer" role is
// the same. The others are stepped over, their roles alone decoded.
func lastMessage(body []byte) json.RawMessage {
	msgs := member(body, "messages")
	if msgs == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(msgs))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil
	}
	var last json.RawMessage
	for dec.More() {
		var m json.RawMessage
		if dec.Decode(&m) != nil {
			return nil
		}
		var r struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(m, &r) == nil && (r.Role == "system" || r.Role == "developer") {
			continue
		}
		last = m
	}
	return last
}

// personSpeaksResponses is personSpeaks for the Responses API: a string
// input is the person's; in an array of items the last one that is not
// the agent's own instruction (role system or developer) must be a user
// message, not a function_call_output or custom_tool_call_output (Codex
// sends the whole input each turn, tool outputs last while it works).
func personSpeaksResponses(body []byte) bool {
	in := bytes.TrimSpace(member(body, "input"))
	if len(in) == 0 {
		return false
	}
	if in[0] == '"' {
		return true
	}
	var last struct {
		Type string `json:"type"`
		Role string `json:"role"`
	}
	found := false
	if !eachItem(in, func(raw json.RawMessage) {
		var it struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Role == "system" || it.Role == "developer" {
			return
		}
		last, found = it, true
	}) || !found {
		return false
	}
	return last.Role == "user" && (last.Type == "" || last.Type == "message")
}

// personSpeaksGemini is personSpeaks for the Gemini API: the last of
// "contents" is the user's and carries no functionResponse part (Gemini
// returns tool results in the user's role).
func personSpeaksGemini(body []byte) bool {
	contents := bytes.TrimSpace(member(body, "contents"))
	if len(contents) == 0 {
		return false
	}
	var last json.RawMessage
	if !eachItem(contents, func(raw json.RawMessage) { last = raw }) || last == nil {
		return false
	}
	var c struct {
		Role  string `json:"role"`
		Parts []struct {
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	}
	if json.Unmarshal(last, &c) != nil || c.Role != "user" {
		return false
	}
	for _, p := range c.Parts {
		if len(p.FunctionResponse) > 0 {
			return false
		}
	}
	return true
}

// eachItem calls fn with each element of a JSON array, decoding one at a
// time; it reports false when arr is not an array.
func eachItem(arr json.RawMessage, fn func(json.RawMessage)) bool {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return false
	}
	for dec.More() {
		var m json.RawMessage
		if dec.Decode(&m) != nil {
			return false
		}
		fn(m)
	}
	return true
}
