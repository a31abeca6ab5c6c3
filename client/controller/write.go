package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// flush sends the pending content that may go now (all of it when all is
// set, even a line that may yet become a marker), in chunks cut on UTF-8
// character boundaries, on the caller's goroutine, after the background
// sender is done. A refusal by the daemon fails the session with an
// event; only a lost daemon or ctx is returned.
func (c *Controller) flush(ctx context.Context, s *session, all bool) error {
	c.settle()
	n := s.sendable()
	if all {
		n = len(s.pend)
	}
	if s.failed {
		s.sent(n)
		return nil
	}
	for n > 0 {
		if s.truncated {
			if err := c.continueSession(ctx, s); err != nil {
				return c.sessionFailed(ctx, s, err, "continuing")
			}
		}
		size := c.chunkSize(s, n)
		if s.retrySize > 0 {
			// A background append of these bytes may have landed; only
			// the same bytes are acknowledged again under its seq.
			size, s.retrySize = min(s.retrySize, n), 0
		}
		err := c.appendChunk(ctx, s, s.pend[:size])
		if pe := asProtocolError(err); pe != nil && pe.Code == protocol.CodeSessionState {
			// The daemon may have ended the session truncated while the
			// model was slow: continue it and send the chunk there.
			if r, rerr := c.resume(ctx, s.id); rerr == nil && r.Stage == protocol.StageTruncated {
				s.truncated = true
				continue
			}
		}
		if err != nil {
			return c.sessionFailed(ctx, s, err, "sending content")
		}
		s.sent(size)
		n -= size
	}
	s.pendSince = c.opts.Now()
	return nil
}

// sessionFailed reports a refusal and stops writing the session; a lost
// daemon is returned as fatal.
func (c *Controller) sessionFailed(ctx context.Context, s *session, err error, doing string) error {
	if asProtocolError(err) == nil {
		return fmt.Errorf("session %s: %s: %w", s.id, doing, err)
	}
	s.failed = true
	s.sent(len(s.pend))
	info := c.errorInfo(err)
	c.emit(Event{Type: EventError, SessionID: s.id, Error: info,
		Text:    fmt.Sprintf("%s: %s failed: %s", s.shown, doing, info.Message),
		Message: &Message{Role: "user", Content: protocol.Fill(protocol.PromptStopped, "target", s.shown, "message", info.Message)}})
	return nil
}

// atMarker ends a session whose marker line just ended: what came before
// it is sent, then the session is finalized.
func (c *Controller) atMarker(ctx context.Context, s *session, marker string) error {
	defer c.pop(s)
	if s.failed {
		return nil
	}
	// Content before the marker line goes first: sending it may find the
	// session truncated and continue it, and then the marker line is not
	// the new session's.
	if err := c.flush(ctx, s, false); err != nil || s.failed {
		return err
	}
	endOfInput := marker != s.marker || s.truncated
	if endOfInput {
		// The daemon would store a marker it does not know as content.
		s.dropLine()
	}
	if err := c.flush(ctx, s, true); err != nil || s.failed {
		return err
	}
	return c.finalize(ctx, s, endOfInput)
}

// finalize writes the session's file. Finalize is idempotent in the
// daemon, so a reconnect simply asks again.
func (c *Controller) finalize(ctx context.Context, s *session, endOfInput bool) error {
	var res protocol.FinalizeResult
	err := c.retry(ctx, func(bool) error {
		var err error
		res, err = c.cli.Finalize(ctx, protocol.FinalizeParams{SessionID: s.id, EndOfInput: endOfInput})
		return err
	})
	if err != nil {
		if asProtocolError(err) == nil {
			return fmt.Errorf("session %s: finalizing: %w", s.id, err)
		}
		info := c.errorInfo(err)
		c.emit(Event{Type: EventError, SessionID: s.id, Error: info,
			Text:    notWritten(s.shown, asProtocolError(err), info.Message),
			Message: &Message{Role: "user", Content: protocol.Fill(protocol.PromptNotWritten, "target", s.shown, "message", info.Message)}})
		return nil
	}
	c.inbox.drop(protocol.NotifySessionFinalized, s.id)
	c.inbox.drop(protocol.NotifySessionIdle, s.id)
	c.emit(Event{Type: EventFinalized, SessionID: s.id, Result: &res, Text: summary(res)})
	return nil
}

// notWritten says, for the person watching, why finalize refused the
// content: the findings that block, not the daemon's message, which is
// written for the model (it says what to send next) and would repeat
// "was not written". msg is the error's message as the event carries it.
func notWritten(shown string, pe *protocol.Error, msg string) string {
	if v := pe.Data.Validation; pe.Data.Reason == protocol.ReasonValidationFailed && v != nil {
		var parts []string
		for _, f := range v.Findings {
			if f.Severity != "error" || f.Preexisting {
				continue
			}
			if len(parts) == 3 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, fmt.Sprintf("line %d: %s [%s]", f.Line, strings.TrimSuffix(f.Message, "."), f.Code))
		}
		if len(parts) > 0 {
			return fmt.Sprintf("%s was not written: %s", shown, strings.Join(parts, "; "))
		}
	}
	msg = strings.TrimSpace(msg)
	if pe.Data.Next != "" {
		msg = strings.TrimSpace(strings.TrimSuffix(msg, pe.Data.Next))
	}
	return fmt.Sprintf("%s was not written: %s", shown, strings.TrimSuffix(msg, "."))
}

// summary says what a finalize wrote, in one line.
func summary(r protocol.FinalizeResult) string {
	// Never "wrote" for a write that did not happen.
	if r.NothingWritten {
		return fmt.Sprintf("already applied to %s (%s), nothing written", r.TargetFile, r.Operation)
	}
	s := fmt.Sprintf("wrote %s (%s): %d lines, %d bytes, sha256 %s", r.TargetFile, r.Operation, r.Lines, r.Bytes, r.SHA256)
	if len(r.Files) > 0 {
		parts := make([]string, len(r.Files))
		for i, f := range r.Files {
			parts[i] = f.Kind + " " + f.TargetFile
			if f.MovedTo != "" {
				parts[i] += " -> " + f.MovedTo
			}
		}
		s = fmt.Sprintf("applied the edit to %d %s, all or none: %s", len(r.Files), textfmt.Word(len(r.Files), "file", "files"), strings.Join(parts, ", "))
	}
	if r.Operation == protocol.OpAppend {
		s += fmt.Sprintf("; the file is now %d bytes", r.FileBytes)
	}
	if r.TrailingBytes > 0 {
		s += fmt.Sprintf("; ignored %d bytes after the end marker", r.TrailingBytes)
	}
	for _, w := range r.Warnings {
		s += "; warning: " + w.Message
	}
	return s
}
