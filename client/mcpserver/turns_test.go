package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// The host shows the server no message of the person's, so its turns
// are the bursts of tool calls: calls closer than the quiet period are
// one turn (with what the agent's own tools wrote meanwhile), named after
// the host; a call after a quiet period begins the next.
func TestTurnsByQuietPeriod(t *testing.T) {
	d := testdaemon.Start(t)
	s, err := mcpserver.New(mcpserver.Options{Socket: d.Socket, WorkspaceRoot: d.Root, TurnQuiet: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go s.Run(ctx, st)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h := &host{t: t, d: d, client: c, cs: cs}

	h.ok("write_file", map[string]any{"target_file": "one.txt", "operation": "create", "content": "one\n"})
	if err := os.WriteFile(filepath.Join(d.Root, "shell.txt"), []byte("by a shell\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ok("write_file", map[string]any{"target_file": "two.txt", "operation": "create", "content": "two\n"})
	turns := listTurns(t, d, func(ts []protocol.TurnInfo) bool { return len(ts) == 1 && ts[0].State == protocol.TurnEnded })
	got := map[string]string{}
	for _, f := range turns[0].Files {
		got[f.Path] = f.Writer
	}
	if len(got) != 3 || got["shell.txt"] != protocol.WriterOutside || got["one.txt"] == protocol.WriterOutside || got["one.txt"] == "" {
		t.Errorf("one turn's files %+v, want one.txt and two.txt by Orion sessions and shell.txt outside", turns[0].Files)
	}
	if turns[0].Agent != "test-host" {
		t.Errorf("agent %q, want the host's name test-host", turns[0].Agent)
	}

	h.ok("write_file", map[string]any{"target_file": "three.txt", "operation": "create", "content": "three\n"})
	listTurns(t, d, func(ts []protocol.TurnInfo) bool {
		return len(ts) == 2 && ts[0].State == protocol.TurnEnded && len(ts[0].Files) == 1 && ts[0].Files[0].Path == "three.txt"
	})
}

func listTurns(t *testing.T, d *testdaemon.Daemon, ok func([]protocol.TurnInfo) bool) []protocol.TurnInfo {
	t.Helper()
	ctx := context.Background()
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var turns []protocol.TurnInfo
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := c.TurnList(ctx, protocol.TurnListParams{WorkspaceRoot: d.Root})
		if err != nil {
			t.Fatal(err)
		}
		if turns = res.Turns; ok(turns) {
			return turns
		}
	}
	t.Fatalf("turns never as expected: %+v", turns)
	return nil
}
