package session_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// When a chunk's sync fails, the session goes back to before it and the
// chunks queued after it fail too; one of those may still be writing into
// the session's streamed file. Whatever ends the session next (here an
// abort, taken as soon as the failed chunk is answered) closes that file
// only once that write is done: under the race detector, closing it
// meanwhile is a race on the file with the write.
func TestStreamedFileClosedAfterItsWritesInFlight(t *testing.T) {
	g := newSyncGate()
	h := newHarnessTweaked(t, store.Options{LogFault: g.fault}, func(c *session.Config) {
		// A large chunk, whose write into the streamed file takes long
		// enough for the abort to come during it.
		c.MaxChunkBytes = 48 << 20
	})
	t.Cleanup(func() {
		select {
		case g.release <- nil:
		default:
		}
	})
	b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate})
	chunks := chunked(streamText(1<<20, "first"), 256<<10)
	h.append(b.SessionID, chunks[0], chunks[1])
	if open, _ := session.Streamed(h.mgr); open != 1 {
		t.Fatalf("%d streamed files open, want the session's", open)
	}
	done3 := heldAppend(h, g, protocol.AppendParams{SessionID: b.SessionID, Seq: 3, Chunk: chunks[2]})
	large := strings.Repeat("a large chunk still being written\n", (40<<20)/34)
	done4 := queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: 4, Chunk: large}, done3)
	g.release <- syscall.EIO
	if o := <-done3; o.err == nil {
		t.Fatal("a chunk acknowledged though its sync failed")
	}
	// Chunk 4 has failed with chunk 3, whether or not its reply is out:
	// the session is free for the next request.
	if _, err := h.mgr.Abort(b.SessionID); err != nil {
		t.Fatal(err)
	}
	if o := <-done4; o.err == nil {
		t.Fatal("a chunk queued behind a failed one acknowledged")
	}
	if open, _ := session.Streamed(h.mgr); open != 0 {
		t.Fatalf("%d streamed files open after the abort, want none", open)
	}
	assertNoTemp(t, h.root)
}

// A streamed file broken by a failed sync holds its disk until the session's
// next chunk, not until the session ends: the chunk sent again after a full
// disk must not find the space still taken by a file that will never be
// the target. The session then finalizes from the journal.
func TestBrokenStreamedFileLetGoAtTheNextChunk(t *testing.T) {
	g := newSyncGate()
	h := newHarnessTweaked(t, store.Options{LogFault: g.fault}, nil)
	t.Cleanup(func() {
		select {
		case g.release <- nil:
		default:
		}
	})
	b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate})
	text := streamText(1<<20, "first")
	chunks := chunked(text, 256<<10)
	h.append(b.SessionID, chunks[0], chunks[1])
	done3 := heldAppend(h, g, protocol.AppendParams{SessionID: b.SessionID, Seq: 3, Chunk: chunks[2]})
	g.release <- syscall.ENOSPC
	if o := <-done3; o.err == nil {
		t.Fatal("a chunk acknowledged though its sync failed")
	}
	if open, _ := session.Streamed(h.mgr); open != 1 {
		t.Fatalf("%d streamed files open after the failed chunk, want the broken one still (no chunk since)", open)
	}
	h.append(b.SessionID, chunks[2])
	if open, _ := session.Streamed(h.mgr); open != 0 {
		t.Fatalf("%d streamed files open after the chunk sent again, want the broken one let go", open)
	}
	h.append(b.SessionID, chunks[3:]...)
	h.append(b.SessionID, b.EndMarker+"\n")
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got := h.read("big.txt"); got != text {
		t.Fatalf("file of %d bytes after the broken stream, want the %d sent", len(got), len(text))
	}
	assertNoTemp(t, h.root)
}
