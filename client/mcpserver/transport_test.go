package mcpserver_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// The server's own transport, under the Go SDK's client on pipes: tool
// calls whose arguments it sets aside (large, escaped, with members
// before and after them, ids of both kinds) reach the tools whole.
func TestTransport(t *testing.T) {
	d := testdaemon.Start(t)
	s, err := mcpserver.New(mcpserver.Options{Socket: d.Socket, WorkspaceRoot: d.Root})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	go s.Run(ctx, s.Transport(toServer, fromServer, 8<<20))
	c := mcp.NewClient(&mcp.Implementation{Name: "pipe-host", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	h := &host{t: t, d: d, client: c, cs: cs}
	content := strings.Repeat("\"quotes\" \\ backslashes \t tabs \u00e9\u4e2d <&> \n", 2000)
	for i, name := range []string{"one.txt", "two.txt"} {
		_, sum := h.ok("write_file", map[string]any{"target_file": name, "operation": "create", "content": content, "intent": strings.Repeat("i", i*100)})
		if sum["lines"] != 2000.0 {
			t.Fatalf("%s: %v", name, sum)
		}
		if got := readFile(t, filepath.Join(d.Root, name)); got != content {
			t.Fatalf("%s differs", name)
		}
	}
	// A call the server refuses, and one with no arguments at all.
	if text, _ := h.fails("write_file", map[string]any{"target_file": "one.txt", "operation": "create", "content": "x"}); !strings.Contains(text, "already exists") {
		t.Errorf("%q", text)
	}
	if text, _ := h.fails("write_abort", nil); !strings.Contains(text, "needs session_id") {
		t.Errorf("%q", text)
	}
	ctx2, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if _, err := cs.ListTools(ctx2, nil); err != nil {
		t.Fatal(err)
	}
}
