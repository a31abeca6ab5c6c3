package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A turn's commands end to end: turns lists it, turn show names its
// files, undo --turn last --dry-run writes nothing, undo --turn last puts
// the files back, redo brings the turn back, checkpoint records.
func TestTurnCommands(t *testing.T) {
	d := testdaemon.Start(t)
	ws := d.Root
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("notes.txt", "first\n")
	c, err := client.Dial(t.Context(), d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.TurnBegin(t.Context(), protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "cd "+ws+" && sed -i s/first/second/ notes.txt && echo new > made.txt").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := c.TurnEnd(t.Context(), b.TurnID); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := orionctl(t, d.Socket, "", append(args, "--workspace", ws)...)
		if code != 0 {
			t.Fatalf("orionctl %v: exit %d: %s%s", args, code, out, errOut)
		}
		return out
	}
	if out := run("turns"); !strings.Contains(out, shortID(b.TurnID)) || !strings.Contains(out, "claude") {
		t.Errorf("turns:\n%s", out)
	}
	if out := run("turn", "show", shortID(b.TurnID), "--diff"); !strings.Contains(out, "modified notes.txt") ||
		!strings.Contains(out, "created  made.txt") || !strings.Contains(out, "+second") {
		t.Errorf("turn show:\n%s", out)
	}
	if out := run("undo", "--turn", "last", "--dry-run"); !strings.Contains(out, "dry run") {
		t.Errorf("undo --dry-run:\n%s", out)
	}
	if got := readRoot(t, d, "notes.txt"); got != "second\n" {
		t.Fatalf("a dry run wrote: %q", got)
	}
	out := run("undo", "--turn", "last")
	if !strings.Contains(out, "reverted       notes.txt") || !strings.Contains(out, "orionctl redo ") {
		t.Errorf("undo --turn last:\n%s", out)
	}
	if got := readRoot(t, d, "notes.txt"); got != "first\n" {
		t.Errorf("after undo: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt after undo: %v", err)
	}
	run("redo")
	if got := readRoot(t, d, "notes.txt"); got != "second\n" {
		t.Errorf("after redo: %q", got)
	}
	var cp protocol.CheckpointInfo
	if err := json.Unmarshal([]byte(run("checkpoint", "--label", "mine", "--pin", "--json")), &cp); err != nil || !cp.Pinned || cp.Label != "mine" {
		t.Errorf("checkpoint --json: %+v, %v", cp, err)
	}
	if code, _, _ := orionctl(t, d.Socket, "", "undo", "--dry-run", "x"); code != exitUsage {
		t.Errorf("undo --dry-run without --turn: exit %d, want %d", code, exitUsage)
	}
}
