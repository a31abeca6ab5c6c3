package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// syncGate holds the content log's next sync, once armed, until the test
// releases it with the sync's outcome.
type syncGate struct {
	mu      sync.Mutex
	armed   bool
	syncing chan struct{}
	release chan error
}

func newSyncGate() *syncGate {
	return &syncGate{syncing: make(chan struct{}), release: make(chan error)}
}

func (g *syncGate) fault(op string) error {
	g.mu.Lock()
	hold := g.armed && op == "sync"
	if hold {
		g.armed = false
	}
	g.mu.Unlock()
	if !hold {
		return nil
	}
	close(g.syncing)
	return <-g.release
}

// gatedHarness is a harness whose content log syncs through a syncGate.
func gatedHarness(t *testing.T) (*harness, *syncGate) {
	g := newSyncGate()
	h := newHarnessWith(t, store.Options{LogFault: g.fault})
	// Before the harness closes (cleanups run last first): a test that
	// failed with a sync held lets it go.
	t.Cleanup(func() {
		select {
		case g.release <- nil:
		default:
		}
	})
	return h, g
}

func (g *syncGate) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

// orderedSignal closes its channel when the append's place is fixed.
type orderedSignal chan struct{}

func (o orderedSignal) Ordered() { close(o) }

type appendOutcome struct {
	res protocol.AppendResult
	err error
}

// appendAsync appends on a goroutine of its own; ordered is closed once the
// chunk is queued (or refused).
func appendAsync(m *session.Manager, p protocol.AppendParams) (ordered orderedSignal, done chan appendOutcome) {
	ordered, done = make(orderedSignal), make(chan appendOutcome, 1)
	go func() {
		res, err := m.AppendOrdered(p, ordered)
		done <- appendOutcome{res, err}
	}()
	return ordered, done
}

// heldAppend appends p with the gate armed and returns once its chunk is
// queued and its batch's sync is held; the test lets the sync go.
func heldAppend(h *harness, gate *syncGate, p protocol.AppendParams) chan appendOutcome {
	gate.arm()
	ordered, done := appendAsync(h.mgr, p)
	<-ordered
	<-gate.syncing
	return done
}

// queuedBehind appends p while held's sync waits, and fails the test unless
// p's chunk is queued before held returns.
func queuedBehind(t *testing.T, h *harness, p protocol.AppendParams, held chan appendOutcome) chan appendOutcome {
	t.Helper()
	ordered, done := appendAsync(h.mgr, p)
	select {
	case <-ordered:
	case o := <-held:
		t.Fatalf("chunk %d was not queued while the one before it synced (that one returned first: %v)", p.Seq, o.err)
	}
	return done
}

// A session's next chunk is queued while the one before it syncs; when that
// sync fails, both fail, the session goes back to the last durable chunk,
// and the client's retries of the failed seqs are taken: the written file
// holds every chunk once, and its hash (summed as the chunks came) is
// right.
func TestPipelinedAppendFailureRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"disk full", syscall.ENOSPC}, {"sync error", syscall.EIO}} {
		t.Run(tc.name, func(t *testing.T) {
			h, gate := gatedHarness(t)
			b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate})
			// Large chunks: their content is hashed beside the journal.
			chunks := make([]string, 4)
			for i := range chunks {
				chunks[i] = strings.Repeat(string(rune('a'+i)), 70<<10-1) + "\n"
			}
			h.append(b.SessionID, chunks[0], chunks[1])

			done3 := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 3, Chunk: chunks[2]})
			done4 := queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: 4, Chunk: chunks[3]}, done3)
			gate.release <- tc.err
			for seq, done := range map[int]chan appendOutcome{3: done3, 4: done4} {
				if o := <-done; o.err == nil {
					t.Fatalf("chunk %d acknowledged though the sync of its batch (or of the chunk before it) failed", seq)
				}
			}

			info, err := h.mgr.Get(b.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if info.LastSeq != 2 || info.Bytes != int64(len(chunks[0])+len(chunks[1])) {
				t.Fatalf("after the failure the session says seq %d, %d bytes; want the last durable chunk, 2", info.LastSeq, info.Bytes)
			}
			res, err := h.mgr.Resume(b.SessionID)
			if err != nil || res.NextSeq != 3 {
				t.Fatalf("resume: next seq %d, %v; want 3", res.NextSeq, err)
			}
			// The client retries from the failed seq.
			last := h.append(b.SessionID, chunks[2], chunks[3])
			all := strings.Join(chunks, "")
			if last.Seq != 4 || last.Bytes != int64(len(all)) || last.Duplicate {
				t.Fatalf("retries: %+v; want seq 4 of %d bytes", last, len(all))
			}
			fin, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true})
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(all))
			if got := h.read("big.txt"); got != all || fin.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("file of %d bytes, sha256 %s; want %d bytes, sha256 %x", len(got), fin.SHA256, len(all), sum)
			}
		})
	}
}

// A crash after a failed sync brings back no chunk queued after the failed
// one: the session resumes at the failed seq, and its content is what was
// acknowledged.
func TestPipelinedAppendFailureThenRestart(t *testing.T) {
	h, gate := gatedHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpCreate})
	h.append(b.SessionID, "one\n")
	done2 := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "two\n"})
	done3 := queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: 3, Chunk: "three\n"}, done2)
	gate.release <- syscall.EIO
	if o := <-done2; o.err == nil {
		t.Fatal("chunk 2 acknowledged though its sync failed")
	}
	if o := <-done3; o.err == nil {
		t.Fatal("chunk 3 acknowledged though the chunk before it failed")
	}
	h.close()
	h.open()
	res, err := h.mgr.Resume(b.SessionID)
	if err != nil || res.NextSeq != 2 {
		t.Fatalf("resume after a restart: next seq %d, %v; want 2", res.NextSeq, err)
	}
	// The client gives up and writes what was acknowledged.
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.read("f.txt"); got != "one\n" {
		t.Fatalf("file holds %q, want only the acknowledged chunk", got)
	}
}

// A finalize or an abort that arrives while a chunk is in flight waits for
// it, and sees the session as journaled: with the chunk when it is durable,
// without it when it failed.
func TestLifecycleWaitsForChunksInFlight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		syncErr error
		// act ends the session; want is the file it leaves ("" for none).
		act  func(h *harness, id string) error
		want string
	}{
		{"finalize after a durable chunk", nil, finalizeNow, "one\ntwo\n"},
		{"finalize after a failed chunk", syscall.ENOSPC, finalizeNow, "one\n"},
		{"abort", nil, func(h *harness, id string) error { _, err := h.mgr.Abort(id); return err }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, gate := gatedHarness(t)
			b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpCreate})
			h.append(b.SessionID, "one\n")
			done := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "two\n"})
			acted := make(chan error, 1)
			go func() { acted <- tc.act(h, b.SessionID) }()
			waitFor(t, h.mgr, b.SessionID, acted)
			gate.release <- tc.syncErr
			if o := <-done; (o.err == nil) != (tc.syncErr == nil) {
				t.Fatalf("chunk 2: %v, its sync %v", o.err, tc.syncErr)
			}
			if err := <-acted; err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				if got := h.read("f.txt"); got != tc.want {
					t.Fatalf("file holds %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func finalizeNow(h *harness, id string) error {
	_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id, EndOfInput: true})
	return err
}

// waitFor gives a request time to reach session id and wait for its
// chunks in flight (it gives up after a while, and the test's checks of
// what the request did then decide); it fails if done is sent first: the
// request returned without waiting.
func waitFor(t *testing.T, m *session.Manager, id string, done chan error) {
	t.Helper()
	for i := 0; session.Waiting(m, id) == 0 && i < 100_000; i++ {
		select {
		case err := <-done:
			t.Fatalf("returned while a chunk was in flight (err %v): it did not wait for it", err)
		default:
			runtime.Gosched()
		}
	}
}

// A retry of a chunk still in flight is not acknowledged before the
// original is durable: when the original fails, the retry is journaled as
// the chunk.
func TestRetryOfChunkInFlight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		syncErr error
		dup     bool
	}{{"original durable", nil, true}, {"original failed", syscall.EIO, false}} {
		t.Run(tc.name, func(t *testing.T) {
			h, gate := gatedHarness(t)
			b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpCreate})
			h.append(b.SessionID, "one\n")
			done := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "two\n"})
			retried := make(chan error, 1)
			var retry protocol.AppendResult
			go func() {
				var err error
				retry, err = h.mgr.Append(protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "two\n"})
				retried <- err
			}()
			waitFor(t, h.mgr, b.SessionID, retried)
			gate.release <- tc.syncErr
			if o := <-done; (o.err == nil) != (tc.syncErr == nil) {
				t.Fatalf("original: %v, its sync %v", o.err, tc.syncErr)
			}
			if err := <-retried; err != nil {
				t.Fatalf("retry: %v", err)
			}
			if retry.Seq != 2 || retry.Bytes != 8 || retry.Duplicate != tc.dup {
				t.Fatalf("retry answered %+v; want seq 2, 8 bytes, duplicate %v", retry, tc.dup)
			}
			if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
				t.Fatal(err)
			}
			if got := h.read("f.txt"); got != "one\ntwo\n" {
				t.Fatalf("file holds %q", got)
			}
		})
	}
}

// The chunks a client sends while one of its session's chunks syncs are
// queued meanwhile and journaled together, with one sync.
func TestPipelinedChunksShareASync(t *testing.T) {
	h, gate := gatedHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpCreate})
	h.append(b.SessionID, "one\n")
	first := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "two\n"})
	before, err := h.st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var rest []chan appendOutcome
	for seq, c := range []string{"three\n", "four\n", "five\n"} {
		rest = append(rest, queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: uint64(seq) + 3, Chunk: c}, first))
	}
	gate.release <- nil
	for _, done := range append([]chan appendOutcome{first}, rest...) {
		if o := <-done; o.err != nil {
			t.Fatal(o.err)
		}
	}
	after, err := h.st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// The held sync (counted once done), and one for the three chunks
	// queued while it ran.
	if got := after.Log.Syncs - before.Log.Syncs; got != 2 {
		t.Fatalf("%d syncs for chunk 2 and the 3 chunks queued while it synced, want 2", got)
	}
	if res, err := h.mgr.Resume(b.SessionID); err != nil || res.NextSeq != 6 {
		t.Fatalf("resume: next seq %d, %v; want 6", res.NextSeq, err)
	}
}

// A session's first chunk carries its record and the target's content at
// begin; when it fails, with the next chunk queued behind it, the session is
// as begun again (not yet journaled, the content at begin still held), and
// the retries journal all of it: a restart then finds the session, and its
// finalize writes the content.
func TestPipelinedFirstChunkFailure(t *testing.T) {
	h, gate := gatedHarness(t)
	if err := os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
	done1 := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "new one\n"})
	done2 := queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "new two\n"}, done1)
	gate.release <- syscall.ENOSPC
	for seq, done := range map[int]chan appendOutcome{1: done1, 2: done2} {
		if o := <-done; o.err == nil {
			t.Fatalf("chunk %d acknowledged though its batch (or the one before) failed", seq)
		}
	}
	info, err := h.mgr.Get(b.SessionID)
	if err != nil || info.LastSeq != 0 || info.Stage != protocol.StageAwaitingContent {
		t.Fatalf("after the failed first chunk: %+v, %v; want the session as begun", info, err)
	}
	h.append(b.SessionID, "new one\n", "new two\n")
	h.close()
	h.open()
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.read("f.txt"); got != "new one\nnew two\n" {
		t.Fatalf("file holds %q", got)
	}
}
