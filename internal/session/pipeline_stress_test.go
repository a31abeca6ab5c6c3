package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// randomFaults fails the content log's writes and syncs now and then, and
// holds each sync a little so that batches form.
type randomFaults struct {
	mu  sync.Mutex
	rnd *rand.Rand
	on  bool
}

func (f *randomFaults) fault(op string) error {
	f.mu.Lock()
	on := f.on
	x := f.rnd.Float64()
	d := time.Duration(f.rnd.Intn(300)) * time.Microsecond
	f.mu.Unlock()
	if !on {
		return nil
	}
	switch op {
	case "write":
		if x < 0.05 {
			return syscall.ENOSPC
		}
	case "sync":
		time.Sleep(d)
		if x < 0.15 {
			return syscall.EIO
		}
	}
	return nil
}

func (f *randomFaults) set(on bool) {
	f.mu.Lock()
	f.on = on
	f.mu.Unlock()
}

// stressChunk is chunk seq of session n: some large enough to be hashed
// beside their journaling, and some, the first among them, as large as a
// file streamed whole sends: the session keeps a running sum (and streams
// its file), and the log writes the next batch while it syncs theirs.
func stressChunk(n int, seq uint64) string {
	line := fmt.Sprintf("session %d chunk %06d\n", n, seq)
	switch {
	case seq == 1 || seq%8 == 0:
		return strings.Repeat(line, (260<<10)/len(line)+1)
	case seq%4 == 0:
		return strings.Repeat(line, (70<<10)/len(line)+1)
	}
	return line
}

// pipelineClient streams chunks 1..total to session id as a client that
// keeps window appends outstanding would (each sent once the one before
// it is queued, as the daemon's order of a session's requests has it). On
// a failure it waits for what is outstanding, asks where the session
// stands and goes on from there. It reports every violation of what a
// client relies on: an acknowledged chunk never lost, no acknowledgement
// after a failed chunk of the same round, a retry of an acknowledged chunk
// answered as a duplicate.
func pipelineClient(t *testing.T, m *session.Manager, n int, id string, total uint64, window int, rnd *rand.Rand) (failures int) {
	type out struct {
		seq  uint64
		done chan appendOutcome
	}
	var (
		next     uint64 = 1
		maxAcked uint64
		pending  []out
		failed   bool
		failedAt uint64
	)
	for {
		for !failed && len(pending) < window && next <= total {
			ordered, done := appendAsync(m, protocol.AppendParams{SessionID: id, Seq: next, Chunk: stressChunk(n, next)})
			<-ordered
			pending = append(pending, out{next, done})
			next++
		}
		if len(pending) == 0 {
			if next > total {
				return failures
			}
		} else {
			o := pending[0]
			pending = pending[1:]
			r := <-o.done
			switch {
			case r.err == nil && failed:
				t.Errorf("session %d: chunk %d acknowledged though chunk %d, sent before it, failed", n, o.seq, failedAt)
			case r.err == nil:
				if r.res.Seq != o.seq || r.res.Duplicate {
					t.Errorf("session %d: chunk %d answered %+v", n, o.seq, r.res)
				}
				maxAcked = max(maxAcked, o.seq)
			case !failed:
				failed, failedAt = true, o.seq
				failures++
			}
			if len(pending) > 0 || !failed {
				continue
			}
		}
		// Every reply is in after a failure: where does the session stand?
		res, err := m.Resume(id)
		if err != nil {
			t.Errorf("session %d: resume: %v", n, err)
			return failures
		}
		if res.LastSeq < maxAcked {
			t.Errorf("session %d: resume says last seq %d; chunk %d was acknowledged", n, res.LastSeq, maxAcked)
		}
		if res.LastSeq >= failedAt {
			t.Errorf("session %d: resume says last seq %d; chunk %d failed", n, res.LastSeq, failedAt)
		}
		if res.LastSeq > 0 && rnd.Intn(2) == 0 {
			// A client that lost the last ack retries it.
			dup, err := m.Append(protocol.AppendParams{SessionID: id, Seq: res.LastSeq, Chunk: stressChunk(n, res.LastSeq)})
			if err == nil && !dup.Duplicate {
				t.Errorf("session %d: retry of durable chunk %d answered %+v, not a duplicate", n, res.LastSeq, dup)
			}
		}
		next, failed = res.NextSeq, false
		if t.Failed() {
			return failures
		}
	}
}

// Sessions stream pipelined chunks while the journal fails now and then:
// every acknowledged chunk stays, none after a failed one is acknowledged,
// and each session's file holds its chunks once, in order, with the hash
// it reports.
func TestPipelinedAppendsUnderRandomFailures(t *testing.T) {
	const total = 40
	h, ids, fails := streamUnderRandomFailures(t, 4, total, 4)
	t.Logf("failed rounds per session: %v", fails)
	if t.Failed() {
		return
	}
	h.close()
	h.open()
	for i, id := range ids {
		res, err := h.mgr.Resume(id)
		if err != nil || res.NextSeq != total+1 {
			t.Fatalf("session %d after a restart: next seq %d, %v; want %d", i, res.NextSeq, err, total+1)
		}
		finalizeStressed(t, h, i, id, total)
	}
}

// As above, finalized without a restart: the sha256 reported and written
// is the file's, though a failure drops the running sum and the finalize
// hashes the content then (the sum itself is checked in sumkept_test.go).
func TestPipelinedAppendsUnderRandomFailuresHash(t *testing.T) {
	const total = 40
	h, ids, _ := streamUnderRandomFailures(t, 3, total, 5)
	if t.Failed() {
		return
	}
	for i, id := range ids {
		finalizeStressed(t, h, i, id, total)
	}
}

// A retry of a durable chunk, while a later chunk is in flight, is answered
// with the session as journaled: not with the bytes, or the end marker, of
// a chunk that may yet fail.
func TestDuplicateWhileLaterChunkInFlight(t *testing.T) {
	h, gate := gatedHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpCreate})
	h.append(b.SessionID, "one\n")
	done := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "two\n" + b.EndMarker + "\n"})
	dup, err := h.mgr.Append(protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: "one\n"})
	gate.release <- syscall.EIO
	if o := <-done; o.err == nil {
		t.Fatal("chunk 2 acknowledged though its sync failed")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !dup.Duplicate || dup.Bytes != 4 || dup.EndMarkerSeen {
		t.Fatalf("retry of chunk 1 answered %+v; want a duplicate of 4 bytes, no end marker seen: chunk 2, in flight, failed", dup)
	}
}

// A finalize that comes while a client streams pipelined chunks, the
// journal failing now and then, writes exactly the chunks acknowledged:
// every one of them, and none that failed or came after it.
func TestFinalizeDuringPipelinedStream(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	faults := &randomFaults{rnd: rand.New(rand.NewSource(seed + 1))}
	h := newHarnessWith(t, store.Options{LogFault: faults.fault, SegmentSize: 4 << 20})
	for round := 0; round < 12; round++ {
		name := fmt.Sprintf("f%d.txt", round)
		id := h.begin(protocol.BeginParams{TargetFile: name, Operation: protocol.OpCreate}).SessionID
		// The first chunk before the race: a finalize of a session
		// with no chunk fails (reading the journal: not found), with or
		// without pipelining.
		h.append(id, stressChunk(round, 1))
		faults.set(round%2 == 0)
		finalized := make(chan error, 1)
		go func(d time.Duration) {
			time.Sleep(d)
			_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id, EndOfInput: true})
			finalized <- err
		}(time.Duration(rnd.Intn(3000)) * time.Microsecond)
		var (
			pending  []chan appendOutcome
			acked    uint64 = 1
			stopped  bool
			seq      uint64 = 2
			ackedSet        = map[uint64]bool{1: true}
		)
		seqOf := map[chan appendOutcome]uint64{}
		for !stopped || len(pending) > 0 {
			for !stopped && len(pending) < 4 && seq <= 200 {
				ordered, done := appendAsync(h.mgr, protocol.AppendParams{SessionID: id, Seq: seq, Chunk: stressChunk(round, seq)})
				<-ordered
				pending = append(pending, done)
				seqOf[done] = seq
				seq++
			}
			if len(pending) == 0 {
				break
			}
			o := <-pending[0]
			s := seqOf[pending[0]]
			pending = pending[1:]
			if o.err != nil {
				stopped = true
				continue
			}
			if o.res.Duplicate {
				t.Fatalf("round %d: chunk %d answered as a duplicate", round, s)
			}
			ackedSet[s] = true
			acked = max(acked, s)
		}
		err := <-finalized
		faults.set(false)
		if err != nil {
			// The finalize's own journaling may fail as the appends'
			// do: once more, without failures.
			t.Logf("round %d: finalize: %v", round, err)
			if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id, EndOfInput: true}); err != nil {
				t.Fatalf("round %d: finalize again: %v", round, err)
			}
		}
		var want strings.Builder
		for s := uint64(1); s <= acked; s++ {
			if !ackedSet[s] {
				t.Fatalf("round %d: chunk %d acknowledged, chunk %d before it not", round, acked, s)
			}
			want.WriteString(stressChunk(round, s))
		}
		if got := h.read(name); got != want.String() {
			t.Fatalf("round %d: file of %d bytes, want the %d acknowledged chunks, %d bytes", round, len(got), acked, want.Len())
		}
	}
}

// A session's first chunk carries its record and the target's content at
// begin; when it fails with the next chunk queued, the retries journal
// both, and after a restart the content at begin is there for the merge
// of a change made meanwhile.
func TestFirstChunkFailureKeepsTheBaseForMerge(t *testing.T) {
	h, gate := gatedHarness(t)
	path := filepath.Join(h.root, "p.txt")
	if err := os.WriteFile(path, []byte(lines(12, nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	b := h.begin(protocol.BeginParams{TargetFile: "p.txt", Operation: protocol.OpOverwrite})
	mine := lines(12, map[int]string{9: "mine nine"})
	half := len(mine) / 2
	done1 := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 1, Chunk: mine[:half]})
	done2 := queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: mine[half:]}, done1)
	gate.release <- syscall.EIO
	if o := <-done1; o.err == nil {
		t.Fatal("chunk 1 acknowledged though its sync failed")
	}
	if o := <-done2; o.err == nil {
		t.Fatal("chunk 2 acknowledged though chunk 1 failed")
	}
	h.append(b.SessionID, mine[:half], mine[half:], b.EndMarker+"\n")
	h.close()
	h.open()
	if err := os.WriteFile(path, []byte("theirs\n"+lines(12, nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if want := "theirs\n" + mine; h.read("p.txt") != want || !res.Merged {
		t.Fatalf("merged %v, file:\n%s\nwant\n%s", res.Merged, h.read("p.txt"), want)
	}
}

// finalizeStressed finalizes stress session i and checks its file and the
// sha256 the finalize reports against all its chunks, once each.
func finalizeStressed(t *testing.T, h *harness, i int, id string, total uint64) {
	t.Helper()
	fin, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id, EndOfInput: true})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for seq := uint64(1); seq <= total; seq++ {
		all.WriteString(stressChunk(i, seq))
	}
	sum := sha256.Sum256([]byte(all.String()))
	if got := h.read(fmt.Sprintf("f%d.txt", i)); got != all.String() || fin.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("session %d: file of %d bytes, sha256 %s; want %d bytes, %x", i, len(got), fin.SHA256, all.Len(), sum)
	}
}

// streamUnderRandomFailures begins sessions and streams total chunks into
// each, window in flight, while the journal fails now and then; it returns
// once every client has all its chunks acknowledged, with the journal
// healthy again, and how many failed rounds each session went through.
func streamUnderRandomFailures(t *testing.T, sessions int, total uint64, window int) (*harness, []string, []int) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	faults := &randomFaults{rnd: rand.New(rand.NewSource(seed))}
	h := newHarnessWith(t, store.Options{LogFault: faults.fault, SegmentSize: 4 << 20})
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = h.begin(protocol.BeginParams{TargetFile: fmt.Sprintf("f%d.txt", i), Operation: protocol.OpCreate}).SessionID
	}
	faults.set(true)
	var wg sync.WaitGroup
	fails := make([]int, sessions)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fails[i] = pipelineClient(t, h.mgr, i, ids[i], total, window, rand.New(rand.NewSource(seed+int64(i))))
		}()
	}
	wg.Wait()
	faults.set(false)
	return h, ids, fails
}
