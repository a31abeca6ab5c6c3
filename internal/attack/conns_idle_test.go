package attack

import (
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestConnsIdleAndHeaderTimeouts: connections that never send a complete
// header, or stay idle with nothing to wait for, no longer hold a place
// forever; one that drives a session or follows the trace is kept however
// quiet it is.
func TestConnsIdleAndHeaderTimeouts(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t, "--connection-idle-timeout", "400ms", "--header-timeout", "400ms")

	t.Run("HalfHeader", func(t *testing.T) {
		c := dialRaw(t, d)
		c.send("Content-Length: 4")
		c.expectClosed()
	})
	t.Run("HeaderWithoutBlankLine", func(t *testing.T) {
		c := dialRaw(t, d)
		c.send("Content-Length: 40\r\n")
		c.expectClosed()
	})
	t.Run("Idle", func(t *testing.T) {
		c := dialRaw(t, d)
		c.stillServes()
		c.expectClosed()
	})
	t.Run("DrivingASessionIsKept", func(t *testing.T) {
		r := dial(t, d)
		var b protocol.BeginResult
		r.must(protocol.MethodSessionBegin, protocol.BeginParams{TargetFile: d.Root + "/kept.txt",
			Operation: protocol.OpCreate, AutoFinalizeMS: 60_000}, &b)
		time.Sleep(2 * time.Second)
		var a protocol.AppendResult
		r.must(protocol.MethodSessionAppend, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "still here\n"}, &a)
		r.must(protocol.MethodSessionAbort, protocol.SessionIDParams{SessionID: b.SessionID}, nil)
	})
	t.Run("FollowingTheTraceIsKept", func(t *testing.T) {
		r := dial(t, d)
		r.must(protocol.MethodTraceFollow, protocol.TraceFollowParams{}, nil)
		time.Sleep(2 * time.Second)
		r.must(protocol.MethodDaemonStatus, nil, nil)
	})
	// Why it closed connections.
	d.WaitLog("closing idle connections", "closing a connection whose frame did not arrive in time")
}
