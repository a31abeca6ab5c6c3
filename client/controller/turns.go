package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/orion-agent/orion/protocol"
)

// cutOff handles a response that ended mid-file because of the output
// limit or a dropped model stream: the session stays open, and the message
// makes the model continue it from the right line.
func (c *Controller) cutOff(ctx context.Context, s *session, finish string) error {
	r, err := c.resume(ctx, s.id)
	if err != nil {
		return c.sessionFailed(ctx, s, err, "resuming")
	}
	if r.Stage == protocol.StageTruncated {
		s.truncated = true
	}
	prompt := r.ContinuePrompt
	if prompt == "" {
		prompt = protocol.Fill(protocol.PromptContinueShort, "target", s.shown, "line", strconv.FormatInt(r.Lines+1, 10), "marker", s.marker)
	}
	c.emit(Event{Type: EventContinue, SessionID: s.id,
		Text:    fmt.Sprintf("%s: the response ended (%s) after %d lines; the session stays open", s.shown, finish, r.Lines),
		Message: &Message{Role: "user", Content: prompt}})
	return nil
}

// stopped handles a response that ended without the marker: relay the
// daemon's idle prompt, or after enough of them let the auto-finalize end
// the session.
func (c *Controller) stopped(ctx context.Context, s *session) error {
	if s.truncated || s.idlePrompts >= c.opts.MaxIdlePrompts {
		if s.truncated {
			return nil
		}
		return c.awaitTruncation(ctx, s)
	}
	prompt := ""
	if n, ok := c.inbox.wait(ctx, c.opts.After, c.opts.IdleWait, protocol.NotifySessionIdle, s.id); ok {
		var in protocol.IdleNotification
		if json.Unmarshal(n.params, &in) == nil {
			prompt = in.Prompt
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if prompt == "" {
		// The daemon's words, so the model hears the same either way.
		prompt = protocol.Fill(protocol.PromptIdle, "target", s.shown, "marker", s.marker)
	}
	s.idlePrompts++
	c.emit(Event{Type: EventIdle, SessionID: s.id,
		Text:    fmt.Sprintf("%s: the model stopped without the end marker", s.shown),
		Message: &Message{Role: "user", Content: prompt}})
	return nil
}

// awaitTruncation waits for the daemon's auto-finalize to end the session
// and reports it. Content that still comes continues it in a new session.
func (c *Controller) awaitTruncation(ctx context.Context, s *session) error {
	var tc *protocol.TruncationContext
	if n, ok := c.inbox.wait(ctx, c.opts.After, c.opts.TruncateWait, protocol.NotifySessionTruncated, s.id); ok {
		var t protocol.TruncationContext
		if json.Unmarshal(n.params, &t) == nil {
			tc = &t
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if tc == nil {
		// The notification may have gone to a connection we lost; the
		// session itself says how it ended.
		var info protocol.SessionInfo
		err := c.retry(ctx, func(bool) error {
			var err error
			info, err = c.cli.Get(ctx, s.id)
			return err
		})
		if err != nil {
			return c.sessionFailed(ctx, s, err, "waiting for the auto-finalize")
		}
		if info.Stage == protocol.StageCompleted && info.Result != nil {
			// It had its marker after all, and the auto-finalize wrote it.
			c.emit(Event{Type: EventFinalized, SessionID: s.id, Result: info.Result, Text: summary(*info.Result)})
			c.pop(s)
			return nil
		}
		if info.Truncation == nil {
			c.emit(Event{Type: EventError, SessionID: s.id, Error: &ErrorInfo{Reason: "still_open",
				Message: fmt.Sprintf("session %s is still %s after %s; the daemon ends it at its auto-finalize timeout", s.id, info.Stage, c.opts.TruncateWait)},
				Text: fmt.Sprintf("%s: still open, neither finished nor truncated", s.shown)})
			s.failed = true
			return nil
		}
		tc = info.Truncation
	}
	s.truncated = true
	c.inbox.drop(protocol.NotifySessionIdle, s.id)
	text := fmt.Sprintf("%s ended without its end marker after %d lines (%d bytes); the content is kept and can be continued", s.shown, tc.Lines, tc.Bytes)
	if tc.IncompleteFile != "" {
		text += "; it was saved to " + tc.IncompleteFile
	}
	c.emit(Event{Type: EventTruncated, SessionID: s.id, Truncation: tc, Text: text,
		Message: &Message{Role: "user", Content: tc.ContinuePrompt}})
	return nil
}
