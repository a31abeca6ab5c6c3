package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// Two hosts with different roots share one daemon: neither sees nor acts
// on the other's sessions, whatever session id it is given.
func TestSessionsOfAnotherWorkspace(t *testing.T) {
	h0 := newHost(t, nil, "")
	a := filepath.Join(h0.d.Root, "projA")
	b := filepath.Join(h0.d.Root, "projB")
	for _, dir := range []string{a, b} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hb := newHost(t, h0.d, "", b)
	ha := newHost(t, h0.d, "", a)

	_, sum := hb.ok("write_file", map[string]any{"target_file": "secret-plan.txt", "operation": "create", "content": "B's work\n"})
	done := sum["session_id"].(string)
	_, beg := hb.ok("write_begin", map[string]any{"target_file": "draft.txt", "operation": "create"})
	open := beg["session_id"].(string)
	_, own := ha.ok("write_file", map[string]any{"target_file": "mine.txt", "operation": "create", "content": "A's work\n"})
	mine := own["session_id"].(string)

	{
		list, st := ha.ok("list_sessions", map[string]any{})
		if strings.Contains(list, done) || strings.Contains(list, open) || strings.Contains(list, b) {
			t.Errorf("A's list shows B's sessions: %s", list)
		}
		if !strings.Contains(list, mine) {
			t.Errorf("A's list misses its own write %s: %s", mine, list)
		}
		if got := len(st["sessions"].([]any)); got != 1 {
			t.Errorf("A's list has %d sessions, want 1: %v", got, st)
		}
		if list, _ := hb.ok("list_sessions", map[string]any{}); strings.Contains(list, mine) || !strings.Contains(list, done) || !strings.Contains(list, open) {
			t.Errorf("B's list: %s", list)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"undo", map[string]any{"session_id": done}},
		{"write_append", map[string]any{"session_id": open, "seq": 1, "chunk": "A's text\n"}},
		{"write_finalize", map[string]any{"session_id": open}},
		{"write_abort", map[string]any{"session_id": open}},
	} {
		res := ha.call(c.tool, c.args)
		if st := structured(t, res); !res.IsError || st["error"] != "outside_workspace" || !strings.Contains(text(res), a) {
			t.Errorf("%s of B's session: %v, want isError outside_workspace naming %s", c.tool, st, a)
		}
	}
	if got, err := os.ReadFile(filepath.Join(b, "secret-plan.txt")); err != nil || string(got) != "B's work\n" {
		t.Errorf("B's file after A's calls: %q, %v", got, err)
	}
	// B's open session is untouched: B goes on with it.
	hb.ok("write_append", map[string]any{"session_id": open, "seq": 1, "chunk": "draft\n"})
	hb.ok("write_finalize", map[string]any{"session_id": open})
	// And A still acts on its own.
	ha.ok("undo", map[string]any{"session_id": mine})
}

func TestListSessionsUnknownStage(t *testing.T) {
	h := newHost(t, nil, "")
	txt, st := h.fails("list_sessions", map[string]any{"stage": "finished"})
	if st["error"] != "invalid_arguments" || !strings.Contains(txt, "completed") {
		t.Errorf("unknown stage: %v %s", st, txt)
	}
}

// A target ending in / names a directory: refused, not cleaned into a
// file of the directory's name.
func TestWriteFileRefusesADirectoryTarget(t *testing.T) {
	d := testdaemon.Start(t)
	h := newHost(t, d, d.Root)
	_, st := h.fails("write_file", map[string]any{"target_file": "notes/", "operation": "create", "content": "x\n"})
	if st["error"] != "target_is_directory" {
		t.Errorf("target notes/: %v", st)
	}
	if _, err := os.Lstat(filepath.Join(h.d.Root, "notes")); !os.IsNotExist(err) {
		t.Errorf("notes exists after the refusal (%v)", err)
	}
}
