package daemon_test

import (
	"errors"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// One connection follows the trace a few times at most: each follow holds
// memory until the connection closes, and a client asking without end
// grew the daemon by hundreds of megabytes. Another connection still
// follows.
func TestTraceFollowIsBoundedPerConnection(t *testing.T) {
	d := testdaemon.Start(t)
	c, ctx := dialWrite(t, d)
	follow := func() error {
		var r protocol.TraceFollowResult
		return c.Call(ctx, protocol.MethodTraceFollow, protocol.TraceFollowParams{}, &r)
	}
	for i := range protocol.MaxFollowsPerConnection {
		if err := follow(); err != nil {
			t.Fatalf("follow %d: %v", i+1, err)
		}
	}
	err := follow()
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Data.Reason != protocol.ReasonTooManyFollows || pe.Code != protocol.CodeTooLarge ||
		pe.Data.Limit != protocol.MaxFollowsPerConnection {
		t.Fatalf("follow %d: %v, want %s with limit %d", protocol.MaxFollowsPerConnection+1, err,
			protocol.ReasonTooManyFollows, protocol.MaxFollowsPerConnection)
	}
	other, ctx2 := dialWrite(t, d)
	var r protocol.TraceFollowResult
	if err := other.Call(ctx2, protocol.MethodTraceFollow, protocol.TraceFollowParams{}, &r); err != nil || !r.Following {
		t.Fatalf("another connection's follow: %+v, %v", r, err)
	}
	// The connection that was refused still serves its other requests.
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("status after the refusal: %v", err)
	}
}
