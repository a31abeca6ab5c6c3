package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// A CRLF checkout of a session's target is no conflict: the watcher's
// event for it records none and sends no session.conflict, while a change
// of the text still does both.
func TestLineEndingsAloneAreNoConflict(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "f.txt")
	os.WriteFile(path, []byte("a\nb\n"), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
	conflicts := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, note := range h.notes {
			if note.method == protocol.NotifySessionConflict && note.session == b.SessionID {
				n++
			}
		}
		return n
	}
	os.WriteFile(path, []byte("a\r\nb\r\n"), 0o644)
	h.mgr.TargetChanged(path, "write")
	info, err := h.mgr.Get(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Conflict != "" || conflicts() != 0 {
		t.Fatalf("a CRLF checkout: conflict %q, %d notifications", info.Conflict, conflicts())
	}
	os.WriteFile(path, []byte("a\r\nB\r\n"), 0o644)
	h.mgr.TargetChanged(path, "write")
	info, err = h.mgr.Get(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Conflict != "write" || conflicts() != 1 {
		t.Fatalf("a change of the text: conflict %q, %d notifications", info.Conflict, conflicts())
	}
}
