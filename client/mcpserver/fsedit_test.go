package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// An edit_file made on content read before another writer changed the
// file is refused, and the other change is kept, not overwritten.
func TestFSEditRefusedWhenFileChanged(t *testing.T) {
	d := testdaemon.Start(t)
	dir := filepath.Join(d.Root, "ws")
	mkdir(t, dir)
	target := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(target, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(mcpserver.Options{Socket: d.Socket, WorkspaceRoot: dir, FilesystemCompatible: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go s.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h := &host{t: t, d: d, cs: cs}

	const theirs = "one\ntwo\nthree, written meanwhile\n"
	mcpserver.SetFSEditHook(s, func(string) {
		if err := os.WriteFile(target, []byte(theirs), 0o644); err != nil {
			t.Error(err)
		}
	})
	edit := map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "two", "newText": "TWO"}}}
	msg, _ := h.fails("edit_file", edit)
	// The daemon's target_changed refusal, as the model reads it.
	if !strings.Contains(msg, "is not the content this write was based on") || !strings.Contains(msg, "Nothing was written") {
		t.Errorf("refusal %q does not say the file changed since it was read", msg)
	}
	if got, _ := os.ReadFile(target); string(got) != theirs {
		t.Fatalf("after the refused edit the file is %q, want the other writer's %q", got, theirs)
	}

	// Made again on the current content, the edit lands.
	mcpserver.SetFSEditHook(s, nil)
	h.ok("edit_file", edit)
	if got, _ := os.ReadFile(target); string(got) != "one\nTWO\nthree, written meanwhile\n" {
		t.Fatalf("after the edit the file is %q", got)
	}
}
