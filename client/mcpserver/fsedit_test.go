package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	h := newFSHost(t, d, dir)

	const theirs = "one\ntwo\nthree, written meanwhile\n"
	mcpserver.SetFSEditHook(h.server, func(string) {
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
	mcpserver.SetFSEditHook(h.server, nil)
	h.ok("edit_file", edit)
	if got, _ := os.ReadFile(target); string(got) != "one\nTWO\nthree, written meanwhile\n" {
		t.Fatalf("after the edit the file is %q", got)
	}
}
