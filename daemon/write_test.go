package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func dialWrite(t *testing.T, d *testdaemon.Daemon) (*client.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// session.write over the socket: the file lands, the method is listed.
func TestSessionWrite(t *testing.T) {
	d := testdaemon.Start(t)
	c, ctx := dialWrite(t, d)
	content := strings.Repeat("line\n", 1000)
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "w/a.txt", WorkspaceRoot: d.Root,
		Operation: protocol.OpCreate}, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(d.Root, "w", "a.txt")); string(got) != content || res.Lines != 1000 || len(res.CreatedDirs) != 1 {
		t.Fatalf("a.txt %d bytes, result %+v", len(got), res)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Methods, protocol.MethodSessionWrite) {
		t.Errorf("daemon.status lists %v", st.Methods)
	}
}

// oriond killed inside a session.write, after its one commit and before
// the rename: the client got no reply, and after the restart the file has
// landed, once, from the journal.
func TestSessionWriteKilledBeforeRename(t *testing.T) {
	d := testdaemon.Start(t)
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=atomicfile.before-rename=1"}
	d.Restart()
	c, ctx := dialWrite(t, d)
	content := strings.Repeat("a line that must land once\n", 500)
	_, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "k.txt", WorkspaceRoot: d.Root,
		Operation: protocol.OpCreate}, Content: content})
	if err == nil {
		t.Fatal("session.write answered, though the daemon was to die before its rename")
	}
	d.Wait()
	d.Env = nil
	d.Restart()
	c, ctx = dialWrite(t, d)
	// Recovery finishes the write after the daemon answers: the file lands
	// with its rename, and the session says completed a moment later.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := os.ReadFile(filepath.Join(d.Root, "k.txt"))
		all, err := c.List(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == content && len(all) == 1 && all[0].Stage == protocol.StageCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: k.txt %d bytes (want %d), sessions %+v\n%s", len(got), len(content), all, d.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	entries, _ := os.ReadDir(d.Root)
	if len(entries) != 1 {
		t.Errorf("the root holds %d entries, want k.txt alone", len(entries))
	}
}

// oriond killed after the reply, at the commit its completion rides: the
// session is completed after the restart and its undo works.
func TestSessionWriteKilledAfterReply(t *testing.T) {
	d := testdaemon.Start(t)
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=store.commit-deferred=1"}
	// Without the trace, whose batches commit every 100 ms, no commit
	// takes the completion, and dies, between the rename and the reply:
	// only the deferred writes' timer, a second after the rename.
	d.Args = append(d.Args, "--trace=false")
	d.Restart()
	c, ctx := dialWrite(t, d)
	target := filepath.Join(d.Root, "u.txt")
	if err := os.WriteFile(target, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: target, Operation: protocol.OpOverwrite},
		Content: "after\n"})
	if err != nil {
		t.Fatal(err)
	}
	d.Wait()
	d.Env = nil
	d.Restart()
	c, ctx = dialWrite(t, d)
	info, err := c.Get(ctx, res.SessionID)
	if err != nil || info.Stage != protocol.StageCompleted {
		t.Fatalf("after the restart: %+v, %v\n%s", info, err, d.Logs())
	}
	if _, err := c.Undo(ctx, res.SessionID); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "before\n" {
		t.Fatalf("after undo: %q", got)
	}
}
