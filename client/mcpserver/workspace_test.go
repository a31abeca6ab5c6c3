package mcpserver_test

//lint:file-ignore SA1019 the test host offers MCP roots, deprecated in the protocol's next version, to show they are not asked for.

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// Directories named by the host's configuration are the workspace, even
// when the host offers roots: relative paths land in the first, an
// absolute one in any of them, the host's roots are never asked for, and
// a path in a root the host offers but the configuration does not name is
// refused.
func TestConfiguredDirectoriesWinOverRoots(t *testing.T) {
	d := testdaemon.Start(t)
	a := mkdir(t, filepath.Join(d.Root, "a"))
	b := mkdir(t, filepath.Join(d.Root, "b"))
	c := mkdir(t, filepath.Join(d.Root, "c"))
	s, err := mcpserver.New(mcpserver.Options{Socket: d.Socket, Directories: []string{b, c}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go s.Run(ctx, st)
	var asked atomic.Int32
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil)
	cl.AddRoots(&mcp.Root{URI: "file://" + a})
	cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "roots/list" {
				asked.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h := &host{t: t, d: d, client: cl, cs: cs}

	h.ok("write_file", map[string]any{"target_file": "rel.txt", "operation": "create", "content": "in b\n"})
	h.ok("write_file", map[string]any{"target_file": filepath.Join(c, "abs.txt"), "operation": "create", "content": "in c\n"})
	msg, _ := h.fails("write_file", map[string]any{"target_file": filepath.Join(a, "no.txt"), "operation": "create", "content": "no\n"})
	if !strings.Contains(msg, b) {
		t.Errorf("refusal %q does not name the workspace %s", msg, b)
	}
	if got := readFile(t, filepath.Join(b, "rel.txt")); got != "in b\n" {
		t.Errorf("rel.txt: %q", got)
	}
	if got := readFile(t, filepath.Join(c, "abs.txt")); got != "in c\n" {
		t.Errorf("abs.txt: %q", got)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("roots/list asked %d times, want never", n)
	}
}
