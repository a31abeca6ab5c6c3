package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func TestExternalChangesToTheTargetAreConflicts(t *testing.T) {
	d := testdaemon.Start(t)
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		event  string
	}{
		{"Write", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("edited in an editor\n")
			f.Close()
		}, "write"},
		{"AtomicSaveRenameOver", func(t *testing.T, path string) {
			tmp := filepath.Join(filepath.Dir(path), ".edit.swp")
			os.WriteFile(tmp, []byte("saved by an editor\n"), 0o644)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, "create"},
		{"Delete", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "remove"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ch := dialWithNotes(t, d)
			ctx := testCtx(t)
			path := filepath.Join(d.Root, tt.name+".txt")
			os.WriteFile(path, []byte("original\n"), 0o644)
			begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: path, Operation: protocol.OpOverwrite})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: 1, Chunk: "mine\n" + begun.EndMarker}); err != nil {
				t.Fatal(err)
			}
			tt.change(t, path)
			var n protocol.ConflictNotification
			ch.await(t, protocol.NotifySessionConflict, &n)
			if n.SessionID != begun.SessionID || n.Event != tt.event {
				t.Fatalf("conflict notification %+v, want event %q", n, tt.event)
			}
			_, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID})
			wantCode(t, err, protocol.CodeTargetChanged, protocol.ReasonTargetChanged)
			if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID, Force: true}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != "mine\n" {
				t.Fatalf("forced finalize wrote %q", got)
			}
		})
	}
}

func writeSpoolEntry(t *testing.T, dir, id, metadata, content string) string {
	t.Helper()
	entry := filepath.Join(dir, id)
	if err := os.MkdirAll(entry, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(entry, "content.txt"), []byte(content), 0o600)
	os.WriteFile(filepath.Join(entry, "metadata.json"), []byte(metadata), 0o600)
	return entry
}

func TestSpoolEntriesBecomeRecoverableSessions(t *testing.T) {
	d := testdaemon.Start(t, "--spool-settle", "100ms")
	spoolDir := filepath.Join(d.StateDir, "spool")
	good := writeSpoolEntry(t, spoolDir, "sess_1", `{"intent":"write the guide","target_file":"`+filepath.Join(d.Root, "guide.md")+
		`","operation":"create","created_at":"2026-01-04T10:00:00Z"}`, "# Guide\n\nrecovered text\n")
	badMeta := `{"intent":"x","target_file":"y","operation":"obliterate","created_at":"2026-01-04T10:00:00Z"}`
	bad := writeSpoolEntry(t, spoolDir, "sess_2", badMeta, "content")

	c := dial(t, d)
	var imported protocol.SessionInfo
	deadline := time.Now().Add(30 * time.Second)
	// The import begins the session, then appends the content: a listing
	// in between shows it still empty, so wait for its content.
	for imported.Bytes == 0 && time.Now().Before(deadline) {
		list, err := c.List(testCtx(t), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if strings.HasSuffix(s.TargetFile, "guide.md") {
				imported = s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if imported.SessionID == "" {
		t.Fatalf("spool entry not imported within 30s\n%s", d.Logs())
	}
	if imported.Bytes != int64(len("# Guide\n\nrecovered text\n")) || imported.Intent != "write the guide" {
		t.Fatalf("imported session %+v", imported)
	}
	// The entry leaves the spool once its import returned.
	for time.Now().Before(deadline) {
		if _, err := os.Stat(good); os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(good); !os.IsNotExist(err) {
		t.Fatalf("imported entry still in the spool: %v", err)
	}
	if _, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: imported.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(d.Root, "guide.md")); string(got) != "# Guide\n\nrecovered text\n" {
		t.Fatalf("recovered file %q", got)
	}

	for time.Now().Before(deadline) && !strings.Contains(d.Logs(), "malformed spool entry") {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(d.Logs(), "unknown_operation") {
		t.Fatalf("malformed entry not reported:\n%s", d.Logs())
	}
	if got, err := os.ReadFile(filepath.Join(bad, "metadata.json")); err != nil || string(got) != badMeta {
		t.Fatalf("malformed entry was touched: %q %v", got, err)
	}
}
