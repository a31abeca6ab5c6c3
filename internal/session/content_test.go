package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

func TestContentReadsTheBackupAndTheStreamedContentBounded(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("original line\n", 40_000) // several backup pieces
	os.WriteFile(filepath.Join(h.root, "c.txt"), []byte(big), 0o600)
	b, _, err := h.writeAll(protocol.BeginParams{TargetFile: "c.txt", Operation: protocol.OpOverwrite}, "new\n")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Backup", func(t *testing.T) {
		got, err := h.mgr.Content(protocol.ContentParams{SessionID: b.SessionID, Source: protocol.ContentBackup})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Available || got.Content != big || got.Total != int64(len(big)) || got.Truncated {
			t.Fatalf("backup: available %v, %d of %d bytes, truncated %v; want the %d replaced", got.Available, got.Bytes, got.Total, got.Truncated, len(big))
		}
	})
	t.Run("BackupBounded", func(t *testing.T) {
		got, err := h.mgr.Content(protocol.ContentParams{SessionID: b.SessionID, Source: protocol.ContentBackup, MaxBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != big[:100] || got.Total != int64(len(big)) || !got.Truncated {
			t.Fatalf("bounded backup: %d of %d bytes, truncated %v", got.Bytes, got.Total, got.Truncated)
		}
	})
	t.Run("NoBackupForACreate", func(t *testing.T) {
		c, _, err := h.writeAll(protocol.BeginParams{TargetFile: "fresh.txt", Operation: protocol.OpCreate}, "x\n")
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.mgr.Content(protocol.ContentParams{SessionID: c.SessionID, Source: protocol.ContentBackup})
		if err != nil || got.Available {
			t.Fatalf("a create replaced nothing, yet: %+v, %v", got, err)
		}
	})
	t.Run("Streamed", func(t *testing.T) {
		s := h.begin(protocol.BeginParams{TargetFile: "s.txt", Operation: protocol.OpCreate})
		if _, err := h.mgr.Append(protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: "line one\nline "}); err != nil {
			t.Fatal(err)
		}
		got, err := h.mgr.Content(protocol.ContentParams{SessionID: s.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != "line one\nline " || got.Source != protocol.ContentStreamed {
			t.Fatalf("streamed content %q (%s)", got.Content, got.Source)
		}
	})
	t.Run("UnknownSource", func(t *testing.T) {
		_, err := h.mgr.Content(protocol.ContentParams{SessionID: b.SessionID, Source: "disk"})
		if c, _ := code(err); c != protocol.CodeInvalidParams {
			t.Fatalf("source disk: %v", err)
		}
	})
}
