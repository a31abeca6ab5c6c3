package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

func TestImportIsIdempotentAndRecoverable(t *testing.T) {
	h := newHarness(t)
	created := time.Date(2026, 1, 4, 10, 0, 0, 0, time.UTC)
	id := session.ImportedID("sess_abc", created)
	content := strings.Repeat("recovered line ✓\n", 30_000)
	p := protocol.BeginParams{Intent: "spool", TargetFile: "big.md", WorkspaceRoot: h.root, Operation: protocol.OpCreate}
	for range 2 {
		got, err := h.mgr.Import(id, p, created, strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		if got != id {
			t.Fatalf("imported as %s, want %s", got, id)
		}
	}
	info, err := h.mgr.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Bytes != int64(len(content)) || info.Lines != 30_000 || !info.CreatedAt.Equal(created) || info.Stage != protocol.StageStreaming {
		t.Fatalf("imported session %+v", info)
	}
	// Without an end marker it is written only on an explicit decision.
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id}); err == nil {
		t.Fatal("spooled content without a marker was written without end_of_input")
	}
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.read("big.md"); got != content {
		t.Fatalf("recovered file differs: %d bytes, want %d", len(got), len(content))
	}
}
