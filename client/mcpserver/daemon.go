package mcpserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// daemonConn is the server's connection to oriond, made on first use and
// made again after it broke: a daemon restarted under a service manager
// comes back on the same socket, and its sessions with it.
type daemonConn struct {
	socket string
	// wait is how long a call keeps trying to reach a daemon that is not
	// answering (restarting) before it reports the daemon down.
	wait time.Duration
	// dial is client.Dial; tests replace it.
	dial func(ctx context.Context, socket string) (*client.Client, error)

	mu sync.Mutex
	c  *client.Client
}

// errDaemonDown is a call that could not reach oriond. Its text is for the
// model, which passes it on to the person.
type errDaemonDown struct {
	socket string
	err    error
}

func (e *errDaemonDown) Error() string {
	return protocol.Fill(protocol.PromptMCPDaemonDown, "socket", e.socket, "command", client.StartCommand(e.socket))
}

func (e *errDaemonDown) Unwrap() error { return e.err }

// get returns the live connection, dialling when there is none. While the
// daemon does not answer it retries for d.wait.
func (d *daemonConn) get(ctx context.Context) (*client.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c != nil {
		select {
		case <-d.c.Done():
			d.c = nil
		default:
			return d.c, nil
		}
	}
	deadline := time.Now().Add(d.wait)
	backoff := 50 * time.Millisecond
	for {
		c, err := d.dial(ctx, d.socket)
		if err == nil {
			d.c = c
			return c, nil
		}
		if time.Now().Add(backoff).After(deadline) {
			return nil, &errDaemonDown{socket: d.socket, err: err}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// drop forgets c after it failed, so the next call dials again.
func (d *daemonConn) drop(c *client.Client) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c == c {
		d.c = nil
	}
	c.Close()
}

// close closes the connection, if any.
func (d *daemonConn) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c != nil {
		d.c.Close()
		d.c = nil
	}
}

// do runs fn on the connection. When the connection broke under it (the
// daemon stopped or restarted), fn runs again on a new connection, for as
// long as d.wait allows: every call it makes is safe to repeat, since
// appends are idempotent by seq and finalize, undo and session.write check
// what a first attempt did.
func (d *daemonConn) do(ctx context.Context, fn func(*client.Client) error) error {
	var deadline time.Time
	for {
		c, err := d.get(ctx)
		if err != nil {
			return err
		}
		err = fn(c)
		if err == nil || !brokenConn(ctx, err) {
			return err
		}
		d.drop(c)
		if deadline.IsZero() {
			deadline = time.Now().Add(d.wait)
		} else if time.Now().After(deadline) {
			return &errDaemonDown{socket: d.socket, err: err}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// brokenConn tells a failed connection from a refusal by the daemon or the
// caller's own cancellation.
func brokenConn(ctx context.Context, err error) bool {
	var pe *protocol.Error
	if errors.As(err, &pe) || ctx.Err() != nil {
		return false
	}
	return true
}
