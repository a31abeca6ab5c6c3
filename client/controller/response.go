package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/orion-agent/orion/protocol"
)

// response is what one streamed response has said so far.
type response struct {
	calls  map[int]*ToolCall
	finish string
}

// event handles one stream event's data.
func (c *Controller) event(ctx context.Context, data string) error {
	if c.opts.Replay {
		data = Replay(data, c.Marker())
	}
	var ch chunk
	if err := json.Unmarshal([]byte(data), &ch); err != nil {
		c.emit(Event{Type: EventError, Error: &ErrorInfo{Reason: "stream_malformed",
			Message: "a stream event is not valid JSON and was skipped: " + preview(data)}})
		return nil
	}
	if ch.Error != nil {
		c.emit(Event{Type: EventError, Error: &ErrorInfo{Reason: "stream_error", Message: ch.Error.Message}})
		return nil
	}
	if c.resp == nil {
		c.resp = &response{calls: map[int]*ToolCall{}}
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			// Alternative completions (n > 1) are not the conversation.
			continue
		}
		for _, d := range choice.Delta.ToolCalls {
			c.resp.toolDelta(d)
		}
		if choice.Delta.Content != nil && *choice.Delta.Content != "" {
			if err := c.content(ctx, *choice.Delta.Content); err != nil {
				return err
			}
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			c.resp.finish = *choice.FinishReason
		}
	}
	return nil
}

// toolDelta adds one fragment to the call it belongs to, by index.
func (r *response) toolDelta(d toolCallDelta) {
	call, ok := r.calls[d.Index]
	if !ok {
		call = &ToolCall{}
		r.calls[d.Index] = call
	}
	if d.ID != "" {
		call.ID = d.ID
	}
	// The name comes whole in the first fragment; some providers repeat
	// it in later ones, others stream it in pieces.
	if n := d.Function.Name; n != "" && n != call.Name {
		call.Name += n
	}
	call.Arguments += d.Function.Arguments
}

// ordered returns the calls by index, giving an id to any that had none.
func (r *response) ordered() []ToolCall {
	idx := make([]int, 0, len(r.calls))
	for i := range r.calls {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]ToolCall, 0, len(idx))
	for _, i := range idx {
		call := *r.calls[i]
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", i)
		}
		out = append(out, call)
	}
	return out
}

// content routes assistant text: into the first open session, up to the
// end of its marker line, and what is left to the next session or, with
// none, through as text.
func (c *Controller) content(ctx context.Context, text string) error {
	for text != "" {
		s := c.active()
		if s == nil {
			c.text.WriteString(text)
			if c.opts.StreamText {
				c.flushText()
			}
			return nil
		}
		// The background sender reads pend while the text is scanned in.
		c.send.mu.Lock()
		if len(s.pend) == 0 {
			s.pendSince = c.opts.Now()
		}
		n, marker := s.scan(text)
		c.send.mu.Unlock()
		text = text[n:]
		if marker != "" {
			if err := c.atMarker(ctx, s, marker); err != nil {
				return err
			}
			continue
		}
		if c.kick(ctx, s) {
			if err := c.flush(ctx, s, false); err != nil {
				return err
			}
		}
		if c.backlogged(s) {
			// The model streams faster than the daemon journals: wait for
			// the appends out, so that the text held here stays bounded
			// and the upstream is read at the daemon's pace.
			c.settle()
			if c.kick(ctx, s) {
				if err := c.flush(ctx, s, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// backlogged reports whether more of s's content waits than the sender
// should hold: a few chunks' worth, at least 1 MiB.
func (c *Controller) backlogged(s *session) bool {
	c.send.mu.Lock()
	defer c.send.mu.Unlock()
	return len(s.pend) >= max(1<<20, 8*c.opts.ChunkBytes)
}

// endResponse acts on a finished response: begins the sessions it asked
// for, and decides what the session it was writing needs next.
func (c *Controller) endResponse(ctx context.Context, fallback string) error {
	r := c.resp
	c.resp = nil
	if r == nil {
		r = &response{calls: map[int]*ToolCall{}}
	}
	finish := r.finish
	if finish == "" {
		finish = fallback
	}
	// The session written before this response's calls are handled: a
	// session begun now has not had its turn yet.
	writing := c.active()
	calls := r.ordered()
	for _, call := range calls {
		if call.Name != protocol.ToolName {
			call := call
			c.emit(Event{Type: EventToolCall, ToolCall: &call})
			continue
		}
		if err := c.begin(ctx, call); err != nil {
			return err
		}
	}
	if writing != nil {
		if err := c.afterResponse(ctx, writing, finish); err != nil {
			return err
		}
	}
	for _, n := range c.inbox.takeAll(protocol.NotifySessionConflict) {
		var cn protocol.ConflictNotification
		_ = json.Unmarshal(n.params, &cn)
		c.emit(Event{Type: EventConflict, SessionID: cn.SessionID,
			Text: fmt.Sprintf("%s changed on disk (%s) while it was being written; finalizing it will be refused", cn.TargetFile, cn.Event)})
	}
	c.emit(Event{Type: EventResponseEnd, FinishReason: finish, ToolCalls: calls})
	return nil
}

// afterResponse handles the session that was receiving text when the
// response ended.
func (c *Controller) afterResponse(ctx context.Context, s *session, finish string) error {
	if s.failed {
		c.pop(s)
		return nil
	}
	if m := s.fullMarker(); m != "" {
		// The marker was the last line, without a newline.
		return c.atMarker(ctx, s, m)
	}
	if err := c.flush(ctx, s, true); err != nil {
		return err
	}
	if s.failed {
		c.pop(s)
		return nil
	}
	switch finish {
	case "length", FinishInterrupted:
		return c.cutOff(ctx, s, finish)
	default:
		return c.stopped(ctx, s)
	}
}
