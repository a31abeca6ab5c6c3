package controller

import (
	"context"
	"errors"
	"strings"

	"github.com/orion-agent/orion/protocol"
)

// begin answers one WritePlanTool_begin call: it opens a session, or says
// exactly what to resend. Either way the call gets a tool result, since
// chat APIs require one for every call.
func (c *Controller) begin(ctx context.Context, call ToolCall) error {
	a := parseBeginArgs(call.Arguments)
	if a.failed != nil {
		c.toolResult(call, "", toJSON(a.failed))
		return nil
	}
	p := a.params
	p.WorkspaceRoot = c.opts.WorkspaceRoot
	p.Agent = c.opts.Agent
	p.IdleMS = c.opts.IdleMS
	p.AutoFinalizeMS = c.opts.AutoFinalizeMS
	p.TruncationPolicy = c.opts.TruncationPolicy
	// A begin whose reply was lost is not retried: it would open a second
	// session. The model is told to call again instead.
	res, err := c.cli.Begin(ctx, p)
	if err != nil {
		if transient(ctx, err) {
			c.toolResult(call, "", toJSON(refusedResult(errors.New(protocol.Fill(protocol.PromptUnreachable, "error", err.Error())))))
			return c.reconnect(ctx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.toolResult(call, "", toJSON(refusedResult(err)))
		return nil
	}
	var notes []string
	if prev := len(c.queue); prev > 0 {
		notes = append(notes, protocol.Fill(protocol.PromptOneAtATime, "previous", c.queue[prev-1].shown))
	}
	if n := ignoredNote(a.ignored); n != "" {
		notes = append(notes, n)
	}
	s := newSession(res, p.TargetFile)
	c.queue = append(c.queue, s)
	c.lastMarker = res.EndMarker
	c.toolResult(call, res.SessionID, toJSON(beginOK{
		OK:           true,
		SessionID:    res.SessionID,
		TargetFile:   res.TargetFile,
		Operation:    string(res.Operation),
		EndMarker:    res.EndMarker,
		Instructions: res.Instructions,
		Note:         strings.Join(notes, " "),
	}))
	return nil
}

func (c *Controller) toolResult(call ToolCall, sessionID, content string) {
	c.emit(Event{Type: EventToolResult, SessionID: sessionID,
		Message: &Message{Role: "tool", ToolCallID: call.ID, Content: content}})
}
