package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/store"
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
		got, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: b.SessionID, Source: protocol.ContentBackup})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Available || got.Content != big || got.Total != int64(len(big)) || got.Truncated {
			t.Fatalf("backup: available %v, %d of %d bytes, truncated %v; want the %d replaced", got.Available, got.Bytes, got.Total, got.Truncated, len(big))
		}
	})
	t.Run("BackupBounded", func(t *testing.T) {
		got, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: b.SessionID, Source: protocol.ContentBackup, MaxBytes: 100})
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
		got, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: c.SessionID, Source: protocol.ContentBackup})
		if err != nil || got.Available {
			t.Fatalf("a create replaced nothing, yet: %+v, %v", got, err)
		}
	})
	t.Run("CallerGone", func(t *testing.T) {
		// A caller that is gone gets ctx's error, never content nor an
		// "unavailable" that would read as the store having lost it.
		s := h.begin(protocol.BeginParams{TargetFile: "gone.txt", Operation: protocol.OpCreate})
		if _, err := h.mgr.Append(protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: "x\n"}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, src := range []string{protocol.ContentStreamed, protocol.ContentBackup} {
			id := s.SessionID
			if src == protocol.ContentBackup {
				id = b.SessionID
			}
			if got, err := h.mgr.Content(ctx, protocol.ContentParams{SessionID: id, Source: src}); !errors.Is(err, context.Canceled) {
				t.Errorf("%s content for a caller gone: %+v, %v; want context.Canceled", src, got, err)
			}
		}
		list, err := h.mgr.ListPage(ctx, protocol.ListParams{All: true})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("session list for a caller gone: %d sessions, %v; want context.Canceled", len(list.Sessions), err)
		}
	})
	t.Run("Streamed", func(t *testing.T) {
		s := h.begin(protocol.BeginParams{TargetFile: "s.txt", Operation: protocol.OpCreate})
		if _, err := h.mgr.Append(protocol.AppendParams{SessionID: s.SessionID, Seq: 1, Chunk: "line one\nline "}); err != nil {
			t.Fatal(err)
		}
		got, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: s.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != "line one\nline " || got.Source != protocol.ContentStreamed {
			t.Fatalf("streamed content %q (%s)", got.Content, got.Source)
		}
	})
	t.Run("UnknownSource", func(t *testing.T) {
		_, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: b.SessionID, Source: "disk"})
		if c, _ := code(err); c != protocol.CodeInvalidParams {
			t.Fatalf("source disk: %v", err)
		}
	})
}

// A reply's size is bounded as encoded: control bytes escape sixfold in
// JSON, so 1 MiB of them would make a 6 MiB reply.
func TestContentIsBoundedByItsEncodedSize(t *testing.T) {
	h := newHarness(t)
	s := h.begin(protocol.BeginParams{TargetFile: "ctl.txt", Operation: protocol.OpCreate})
	chunk := strings.Repeat("\x01", 64<<10)
	const chunks = 16
	for seq := 1; seq <= chunks; seq++ {
		if _, err := h.mgr.Append(protocol.AppendParams{SessionID: s.SessionID, Seq: uint64(seq), Chunk: chunk}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: s.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := json.Marshal(got.Content)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > protocol.MaxContentBytes+2 {
		t.Errorf("content encodes to %d bytes, over the %d a reply carries", len(enc), protocol.MaxContentBytes)
	}
	if !got.Truncated || got.Total != chunks*int64(len(chunk)) || got.Bytes != int64(len(got.Content)) || got.Bytes < protocol.MaxContentBytes/6-1 {
		t.Errorf("content: %d of %d bytes, truncated %v; want the first %d, truncated", got.Bytes, got.Total, got.Truncated, protocol.MaxContentBytes/6)
	}
	// Text that needs no escaping still comes whole up to the limit.
	if n, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: s.SessionID, MaxBytes: 1000}); err != nil || n.Bytes != 1000 {
		t.Errorf("max_bytes 1000: %d bytes, %v", n.Bytes, err)
	}
}

// The backup of a session is read up to its last piece and no further: a
// damaged record of something else stored after it does not fail it.
func TestContentBackupReadsNothingPastItsPieces(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "c.txt"), []byte("original\n"), 0o600)
	b, _, err := h.writeAll(protocol.BeginParams{TargetFile: "c.txt", Operation: protocol.OpOverwrite}, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	// Sorts right after the session's pieces, "<id>/<n>".
	next := []byte(b.SessionID + "0")
	if err := h.st.PutKV("backups", []store.KV{{Key: next, Value: []byte("UNRELATED-AND-DAMAGED")}}); err != nil {
		t.Fatal(err)
	}
	damageLogged(t, h.db, "UNRELATED-AND-DAMAGED")
	if _, _, err := h.st.GetKV("backups", next); !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("the record after the pieces reads back as %v, want it damaged", err)
	}
	got, err := h.mgr.Content(context.Background(), protocol.ContentParams{SessionID: b.SessionID, Source: protocol.ContentBackup})
	if err != nil || got.Content != "original\n" {
		t.Fatalf("backup = %q, %v; want the replaced content", got.Content, err)
	}
}

// damageLogged flips a bit of the value that begins with marker in the
// content log of the store at path.
func damageLogged(t *testing.T, path, marker string) {
	t.Helper()
	dir := store.LogDir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(marker)); i >= 0 {
			// In place: the store has the file open.
			_, err = f.WriteAt([]byte{b[i] ^ 1}, int64(i))
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		f.Close()
	}
	t.Fatalf("%q is not in the content log", marker)
}
