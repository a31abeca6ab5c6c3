package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// asProtocolError returns the daemon's refusal inside err, or nil when err
// is something else (a lost connection, a cancelled context).
func asProtocolError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// transient reports whether err is a transport failure worth a reconnect.
func transient(ctx context.Context, err error) bool {
	return err != nil && asProtocolError(err) == nil && ctx.Err() == nil
}

func (c *Controller) dial(ctx context.Context) (*client.Client, error) {
	return c.opts.Dial(ctx, client.Options{OnNotification: c.inbox.push})
}

// reconnect replaces a lost connection, with backoff between attempts, and
// resumes every open session on the new one: resuming makes this
// connection the session's driver again, so its notifications reach us.
func (c *Controller) reconnect(ctx context.Context) error {
	// The background sender holds the connection being replaced.
	c.settle()
	if c.cli != nil {
		c.cli.Close()
	}
	var last error
	for attempt := range c.opts.Reconnects {
		if attempt > 0 {
			delay := min(50*time.Millisecond<<attempt, 2*time.Second)
			select {
			case <-c.opts.After(delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		cli, err := c.dial(ctx)
		if err != nil {
			last = err
			continue
		}
		c.cli = cli
		for _, s := range c.queue {
			if !s.failed && !s.truncated {
				// A failure here shows again on the session's next call.
				_, _ = cli.Resume(ctx, s.id)
			}
		}
		return nil
	}
	return fmt.Errorf("reconnecting after %d attempts: %w", c.opts.Reconnects, last)
}

// retry runs op, and after a transport failure reconnects and runs it
// again, telling it so: an op whose effect may have landed before the
// connection broke checks first.
func (c *Controller) retry(ctx context.Context, op func(reconnected bool) error) error {
	err := op(false)
	for attempt := 0; transient(ctx, err) && attempt < c.opts.Reconnects; attempt++ {
		if rerr := c.reconnect(ctx); rerr != nil {
			return rerr
		}
		err = op(true)
	}
	if transient(ctx, err) {
		return fmt.Errorf("%w: %v", client.ErrDaemonUnreachable, err)
	}
	return err
}

func (c *Controller) resume(ctx context.Context, id string) (protocol.ResumeResult, error) {
	var r protocol.ResumeResult
	err := c.retry(ctx, func(bool) error {
		var err error
		r, err = c.cli.Resume(ctx, id)
		return err
	})
	return r, err
}

// appendChunk sends one chunk with the session's next seq. After a
// reconnect it resumes first: if the daemon committed the chunk before the
// connection broke (its next_seq is past ours) the chunk is not sent again.
func (c *Controller) appendChunk(ctx context.Context, s *session, data []byte) error {
	seq := s.nextSeq
	err := c.retry(ctx, func(reconnected bool) error {
		if reconnected {
			r, err := c.cli.Resume(ctx, s.id)
			if err != nil {
				return err
			}
			if r.NextSeq > seq {
				return nil
			}
		}
		_, err := c.cli.Append(ctx, protocol.AppendParams{SessionID: s.id, Seq: seq, Chunk: string(data)})
		return err
	})
	if err == nil {
		s.nextSeq = seq + 1
		// Everything the daemon said before this ack is in the inbox; an
		// idle prompt among it is out of date now.
		c.inbox.drop(protocol.NotifySessionIdle, s.id)
	}
	return err
}

// continueSession chains a new session to a truncated one, so the content
// that still comes is written after what the truncated one holds.
func (c *Controller) continueSession(ctx context.Context, s *session) error {
	var res protocol.BeginResult
	err := c.retry(ctx, func(bool) error {
		var err error
		res, err = c.cli.Continue(ctx, s.id)
		return err
	})
	if pe := asProtocolError(err); pe != nil && pe.Data.Reason == protocol.ReasonAlreadyContinued && pe.Data.SessionID != "" {
		// Our own earlier attempt got through before the connection broke.
		r, rerr := c.resume(ctx, pe.Data.SessionID)
		if rerr != nil {
			return rerr
		}
		res, err = protocol.BeginResult{SessionID: r.SessionID, EndMarker: r.EndMarker, TargetFile: r.TargetFile, Operation: r.Operation}, nil
	}
	if err != nil {
		return err
	}
	old := s.id
	c.inbox.drop(protocol.NotifySessionTruncated, old)
	c.inbox.drop(protocol.NotifySessionIdle, old)
	s.continued(res)
	c.emit(Event{Type: EventContinued, SessionID: s.id,
		Text: fmt.Sprintf("%s: session %s had ended without its end marker; the content continues in session %s", s.shown, old, s.id)})
	return nil
}
