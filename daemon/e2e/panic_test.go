package e2e_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A panic while serving a request (a bug) costs that request only: it is
// answered internal_error, its stack is logged, and the same connection,
// the session the request was about and the daemon go on. The failpoint
// panics in the third request served, an append, so the session's queue
// must also have let go of it.
func TestPanicIsAnsweredAndSurvived(t *testing.T) {
	d := testdaemon.StartEnv(t, []string{failpoint.EnvVar + "=daemon.serve=3:panic"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid := d.PID()

	if _, err := c.Status(ctx); err != nil { // 1
		t.Fatal(err)
	}
	begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "a.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}) // 2
	if err != nil {
		t.Fatal(err)
	}
	chunk := protocol.AppendParams{SessionID: begun.SessionID, Seq: 1, Chunk: "hello\n" + begun.EndMarker + "\n"}
	_, err = c.Append(ctx, chunk) // 3: panics
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInternalError || pe.Data.Reason != protocol.ReasonInternal ||
		pe.Data.Method != protocol.MethodSessionAppend {
		t.Fatalf("the panicking append answered %v, want internal_error naming session.append", err)
	}

	// The same connection, the same session.
	if _, err := c.Append(ctx, chunk); err != nil {
		t.Fatalf("the append retried after the panic: %v", err)
	}
	if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(d.Root, "a.txt")); err != nil || string(got) != "hello\n" {
		t.Fatalf("a.txt = %q, %v", got, err)
	}
	// Another connection, the same process.
	other, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	st, err := other.Status(ctx)
	if err != nil || st.PID != pid {
		t.Fatalf("status after the panic: pid %d (was %d), %v", st.PID, pid, err)
	}

	d.WaitLog("a request panicked", "method=session.append", "failpoint daemon.serve", "runtime/debug.Stack")
}
