package controller

import (
	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/protocol"
)

// Event types. Each Event says something the agent shows, sends to the
// model, or runs.
const (
	// EventText is assistant text outside any session: show it, keep it.
	EventText = "text"
	// EventToolCall is a complete call of a tool other than
	// WritePlanTool_begin; the agent runs it and answers it itself.
	EventToolCall = "tool_call"
	// EventToolResult answers a WritePlanTool_begin call: send Message.
	EventToolResult = "tool_result"
	// EventFinalized: a session's file is written; Result is the summary
	// and Text says it in one line.
	EventFinalized = "finalized"
	// EventContinue: the response was cut off mid-file; send Message to
	// have the model continue the same session.
	EventContinue = "continue"
	// EventIdle: the model stopped without the end marker; send Message.
	EventIdle = "idle"
	// EventTruncated: the session ended without its marker (the daemon's
	// auto-finalize). Truncation says where it stopped; Message asks the
	// model to continue, which the controller then chains to it.
	EventTruncated = "truncated"
	// EventContinued: content arrived for a truncated session, so it goes
	// on in a new session chained to it (session.continue).
	EventContinued = "continued"
	// EventConflict: the target changed on disk during the session.
	EventConflict = "conflict"
	// EventError: a session could not go on (the daemon refused a chunk or
	// the write). Message, if set, tells the model.
	EventError = "error"
	// EventResponseEnd closes each response, with its finish reason and
	// every tool call it made, for the agent's history.
	EventResponseEnd = "response_end"
)

// Event is one thing the controller reports. The JSON form is what
// `orionctl stream` prints, one per line, and what the Node package emits.
type Event struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id,omitempty"`
	// Text is assistant text (text) or a one-line summary.
	Text string `json:"text,omitempty"`
	// ToolCall is the call to run (tool_call).
	ToolCall *ToolCall `json:"tool_call,omitempty"`
	// Message is what to send to the model next.
	Message    *Message                    `json:"message,omitempty"`
	Result     *protocol.FinalizeResult    `json:"result,omitempty"`
	Truncation *protocol.TruncationContext `json:"truncation,omitempty"`
	Error      *ErrorInfo                  `json:"error,omitempty"`
	// FinishReason and ToolCalls describe the response (response_end).
	FinishReason string     `json:"finish_reason,omitempty"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
}

// Message is a chat message in the OpenAI shape: a tool result (role
// "tool" with ToolCallID) or a user message.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a tool call assembled from its streamed fragments.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ErrorInfo is a daemon error as an event carries it.
type ErrorInfo struct {
	Code    int64  `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

func (c *Controller) errorInfo(err error) *ErrorInfo {
	info := &ErrorInfo{Message: err.Error()}
	if pe := asProtocolError(err); pe != nil {
		info = &ErrorInfo{Code: pe.Code, Reason: pe.Data.Reason, Message: pe.Message}
	}
	if c.opts.WithholdFileText {
		info.Message = edit.WithoutFileText(info.Message)
	}
	return info
}
