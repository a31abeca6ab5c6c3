package controller

import (
	"bufio"
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/orion-agent/orion/client"
)

// Finish reasons the controller gives a response beyond the model's own.
const (
	// FinishInterrupted: the stream ended before "data: [DONE]", as when
	// the model's connection drops. Handled like "length".
	FinishInterrupted = "interrupted"
)

// Controller consumes one conversation's model stream and drives oriond
// from it. It is not safe for concurrent use: feed it one line at a time,
// in order, from one goroutine.
type Controller struct {
	opts  Options
	cli   *client.Client
	inbox *inbox

	// queue holds the sessions begun and not yet ended, in the order of
	// the calls; the first receives the model's text.
	queue      []*session
	lastMarker string
	// send runs the active session's appends in the background.
	send sender

	data eventData
	resp *response
	text strings.Builder
}

// New connects to oriond.
func New(ctx context.Context, opts Options) (*Controller, error) {
	opts.setDefaults()
	c := &Controller{opts: opts, inbox: newInbox()}
	cli, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.cli = cli
	return c, nil
}

// Close closes the connection to the daemon. Open sessions stay in the
// daemon, resumable.
func (c *Controller) Close() error {
	err := c.cli.Close()
	// An append still out fails now; its session stays resumable.
	c.settle()
	return err
}

// Marker is the end marker the model is writing toward: the first
// session's, else the last one begun. Replay substitutes it.
func (c *Controller) Marker() string {
	if s := c.active(); s != nil {
		return s.markers[0]
	}
	return c.lastMarker
}

// Run feeds every line of r, then EndOfStream. r may hold one response or
// several, one after the other.
func (c *Controller) Run(ctx context.Context, r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if lerr := c.Line(ctx, strings.TrimSuffix(line, "\n")); lerr != nil {
				return lerr
			}
		}
		if errors.Is(err, io.EOF) {
			return c.EndOfStream(ctx)
		}
		if err != nil {
			return err
		}
	}
}

// Line handles one line of the stream, without its line ending. The error
// is fatal (the daemon is gone, ctx ended); what the daemon refuses
// becomes an event.
func (c *Controller) Line(ctx context.Context, line string) error {
	l := parseSSELine(line)
	switch l.kind {
	case lineComment:
		if c.opts.OnComment != nil {
			// A harness acts on the daemon as the stream before the
			// comment left it: the content sent so far is acknowledged.
			if err := c.acknowledged(ctx); err != nil {
				return err
			}
			c.opts.OnComment(ctx, l.payload)
		}
	case lineBlank:
		if d, ok := c.data.take(); ok {
			return c.event(ctx, d)
		}
	case lineData:
		if d, ok := c.data.add(l.payload); ok {
			return c.event(ctx, d)
		}
	case lineDone:
		if d, ok := c.data.take(); ok {
			if err := c.event(ctx, d); err != nil {
				return err
			}
		}
		return c.endResponse(ctx, "")
	}
	return nil
}

// EndOfStream says the byte stream ended. A response still open (no
// "data: [DONE]") was cut off and is handled as interrupted.
func (c *Controller) EndOfStream(ctx context.Context) error {
	if d, ok := c.data.take(); ok {
		if err := c.event(ctx, d); err != nil {
			return err
		}
	}
	if c.resp != nil {
		return c.endResponse(ctx, FinishInterrupted)
	}
	return nil
}

// Finish ends the conversation: every session still open is given until
// the daemon's auto-finalize ends it, and reported truncated.
func (c *Controller) Finish(ctx context.Context) error {
	if err := c.EndOfStream(ctx); err != nil {
		return err
	}
	for len(c.queue) > 0 {
		s := c.queue[0]
		if !s.failed && !s.truncated {
			if err := c.flush(ctx, s, true); err != nil {
				return err
			}
			if !s.failed && !s.truncated {
				if err := c.awaitTruncation(ctx, s); err != nil {
					return err
				}
			}
		}
		c.pop(s)
	}
	c.flushText()
	return nil
}

// Open is how many sessions are begun and not yet ended: while there are
// any, the model's next response is owed their content.
func (c *Controller) Open() int { return len(c.queue) }

func (c *Controller) active() *session {
	if len(c.queue) == 0 {
		return nil
	}
	return c.queue[0]
}

func (c *Controller) pop(s *session) {
	c.queue = slices.DeleteFunc(c.queue, func(q *session) bool { return q == s })
}

// emit sends an event, after the text that came before it.
func (c *Controller) emit(e Event) {
	c.flushText()
	c.opts.OnEvent(e)
}

func (c *Controller) flushText() {
	if c.text.Len() > 0 {
		t := c.text.String()
		c.text.Reset()
		c.opts.OnEvent(Event{Type: EventText, Text: t})
	}
}
