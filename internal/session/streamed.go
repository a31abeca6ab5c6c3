package session

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/protocol"
)

// A large file streamed whole (orionctl write, or a begin that announces a
// large size) is written twice if its finalize writes it from the journal:
// once into the journal as its chunks arrive, then again, read back, into
// the target's temp file, a long tail after the last chunk. So such a
// session also writes its chunks into a file without a name next to its
// target (atomicfile.Streamed), each at its place, from the chunk's own
// bytes, while the journal writes and syncs it (on a goroutine of its own:
// the appending one may lead the journal's next batch, which must not wait
// for this write); the reply waits for both. Its finalize, when its checks
// leave the
// content as it was sent, truncates that file to the content (the marker
// and the text after it are not content), fsyncs it and names it, as it
// names a file written early (early.go): no second copy.
//
// The streamed file is a cache of the journal, never the record of
// anything: until the finalize names it, after the finalize's record is
// durable, a crash takes it away (it has no name) and recovery writes the
// file from the journal as before. Anything that makes it differ from the
// journal drops it, and the finalize writes the file the usual way:
//   - a chunk that fails (the session is rolled back to before it);
//   - a write into it that fails (a full disk);
//   - checks that repair the content, or a running sum that was lost;
//   - the session ending otherwise (aborted, expired, superseded,
//     truncated) or any finalize attempt, successful or not.
// Only whole-file creates and overwrites stream: an append's or a patch's
// file is not its content.

// DefaultStreamFileBytes is Config.StreamFileBytes's default: the size a
// begin announces from which its session streams whatever its chunks.
const DefaultStreamFileBytes = 4 << 20

// streamFirstChunk is the size of a chunk from which a session streams: a
// client sending chunks this large is sending a file whole.
const streamFirstChunk = 256 << 10

// Bounds on the streamed files the daemon holds open, each one descriptor
// (their bytes are the kernel's page cache, not the daemon's memory): past
// them a session is written at its finalize, as any other.
const (
	maxStreamedFiles       = 32
	maxClientStreamedFiles = 8
)

// streamed is a session's streamed file.
type streamed struct {
	file *atomicfile.Streamed
	// broken is set once the file may differ from the session's stream
	// (a chunk failed): it is then only dropped.
	broken atomic.Bool
	// owner is the session's client, counted in streamBudget.
	owner string
	// writes counts the chunks queued for the file and not yet written
	// into it (added under e.mu by queueAppend): the file is closed only
	// once they are done. A chunk that fails takes the session back to
	// before it, chunks queued after it with it, while theirs may still
	// be writing.
	writes sync.WaitGroup
}

// streamBudget counts the streamed files open, in all and per client (a
// session begun without one, in the daemon's own process, counts only in
// all).
type streamBudget struct {
	mu       sync.Mutex
	open     int
	byClient map[string]int
}

func (b *streamBudget) take(owner string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open >= maxStreamedFiles || (owner != "" && b.byClient[owner] >= maxClientStreamedFiles) {
		return false
	}
	if b.byClient == nil {
		b.byClient = map[string]int{}
	}
	b.open++
	b.byClient[owner]++
	return true
}

func (b *streamBudget) give(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open--
	if b.byClient[owner]--; b.byClient[owner] <= 0 {
		delete(b.byClient, owner)
	}
}

// streamFor returns the streamed file chunk (of r's stream, from offset
// r.Scanner.Total) is to be written into, starting one if r now qualifies,
// or nil. backfill is set when the file starts with this chunk but the
// stream does not: the journal's bytes before it are copied first. e.mu
// held, r the record before chunk.
func (m *Manager) streamFor(e *entry, r *record, chunk []byte) (s *streamed, backfill bool) {
	if e.stream != nil {
		if e.stream.broken.Load() {
			if len(e.mu.flight) == 0 {
				// It will never be the target: its disk goes back
				// before this chunk is journaled (a full disk may be
				// what broke it), not at the session's end.
				m.dropStream(e)
			}
			return nil, false
		}
		return e.stream, false
	}
	at := r.Scanner.Total
	if e.streamTried || m.cfg.StreamFileBytes < 0 || !streams(r) {
		return nil, false
	}
	// Small chunks (a model's stream, or a client's of 64 KiB) are not
	// worth a write each on their append's path, unless begin announced
	// a large file: such content is mostly checked in memory, and its file
	// written while the finalize's record is journaled (early.go).
	if len(chunk) < streamFirstChunk && r.ExpectedBytes < m.cfg.StreamFileBytes {
		return nil, false
	}
	switch {
	case at == 0:
	case len(e.mu.flight) == 0 && (r.sum != nil || at+int64(len(chunk)) <= m.cfg.ValidateMaxBytes):
		// A stream that starts here (resumed after a restart, or whose
		// first chunks were small): everything before the chunk is
		// durable in the journal, where the file's start is copied
		// from. The finalize needs the content's hash: a running sum,
		// or the content checked (and hashed) in memory, which it
		// still is unless it grows past the limit.
		backfill = true
	default:
		return nil, false
	}
	e.streamTried = true
	if !m.streams.take(e.owner) {
		return nil, false
	}
	d, _, err := m.fsOf(r).Within(m.workspaceOf(r)).OpenParent(r.Target)
	if err != nil {
		// A directory still to be made, or gone: written at the
		// finalize, which says what is wrong.
		m.streams.give(e.owner)
		return nil, false
	}
	var f *atomicfile.Streamed
	if testHookNoHidden.Load() {
		err = atomicfile.ErrNoHidden
	} else {
		f, err = atomicfile.StreamHidden(d)
	}
	d.Close()
	if err != nil {
		if !errors.Is(err, atomicfile.ErrNoHidden) {
			m.cfg.Logger.Warn("starting a streamed file; it is written at its finalize", "session", r.ID, "err", err)
		}
		m.streams.give(e.owner)
		return nil, false
	}
	e.stream = &streamed{file: f, owner: e.owner}
	return e.stream, backfill
}

// testHookNoHidden, set by tests, makes files without a name look
// unavailable, as on a file system without O_TMPFILE: streamed files and
// files written early are not made.
var testHookNoHidden atomic.Bool

// streams reports whether r's file may be streamed: a whole-file create
// or overwrite of its own content.
func streams(r *record) bool {
	return (r.Operation == protocol.OpCreate || r.Operation == protocol.OpOverwrite) &&
		r.TxID == "" && len(r.Chain) == 0 && r.inline == nil
}

// write writes chunk, the stream's bytes from offset at, into the file,
// after the journal's bytes before it when backfill is set. A failure
// breaks the file, never the append.
func (m *Manager) streamWrite(s *streamed, id string, chunk []byte, at int64, backfill bool) {
	if s.broken.Load() {
		return
	}
	if backfill {
		n, err := m.cfg.Store.CopyRange(id, &offsetWriter{f: s.file}, 0, at)
		if err != nil || n != at {
			s.broken.Store(true)
			return
		}
	}
	if err := s.file.WriteAt(chunk, at); err != nil {
		s.broken.Store(true)
		return
	}
	// Crash tests die here: a chunk in the streamed file, its journal
	// record perhaps not yet durable.
	failpoint.Hit("session.streamed-chunk")
}

// startStreamWrite writes c into its streamed file on a goroutine of its
// own, and returns what is closed once it is written; a small chunk is
// written here, at once, its write cheaper than a goroutine, and nil
// returned. (A function of its own, so that what an append's wait holds
// does not escape for the goroutine on every append.)
func (m *Manager) startStreamWrite(c *streamChunk, id string) chan struct{} {
	if len(c.chunk) < parallelSum && !c.backfill {
		m.streamWrite(c.s, id, c.chunk, c.at, false)
		c.s.writes.Done()
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.s.writes.Done()
		m.streamWrite(c.s, id, c.chunk, c.at, c.backfill)
	}()
	return done
}

// offsetWriter writes to a streamed file from its start on.
type offsetWriter struct {
	f   *atomicfile.Streamed
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	if err := w.f.WriteAt(p, w.off); err != nil {
		return 0, err
	}
	w.off += int64(len(p))
	return len(p), nil
}

// dropStream closes e's streamed file, if any, once the writes into it
// of chunks that failed in flight are done. e.mu held, no chunk in flight.
func (m *Manager) dropStream(e *entry) {
	if s := e.stream; s != nil {
		e.stream = nil
		s.writes.Wait()
		s.file.Close()
		m.streams.give(s.owner)
	}
}

// stageStreamed turns e's streamed file into the finalize's staged file
// (see early) when it holds exactly what the finalize writes: writeOp is
// the session's own, the content c is the journal's as sent, and its hash
// (sum, pending) is known. It returns nil otherwise, the file dropped.
func (m *Manager) stageStreamed(e *entry, writeOp protocol.Operation, c checked, pending string) *early {
	s := e.stream
	if s == nil {
		return nil
	}
	r := &e.rec
	own := r.own()
	sum := pending
	if c.content != nil && (!c.asSent || int64(len(c.content)) != own.Bytes) {
		sum = ""
	} else if c.content == nil {
		sum = r.sum.sum(own.Bytes, r.Scanner.Total)
	}
	if s.broken.Load() || writeOp != r.Operation || !streams(r) || sum == "" {
		m.dropStream(e)
		return nil
	}
	d, name, err := m.fsOf(r).Within(m.workspaceOf(r)).OpenParent(r.Target)
	if err != nil {
		m.dropStream(e)
		return nil
	}
	e.stream = nil
	mode := atomicfile.Replace
	if writeOp == protocol.OpCreate {
		mode = atomicfile.CreateNew
	}
	// The file holds exactly the content, counted as its appends were.
	content := &counter{bytes: own.Bytes, nl: own.Newlines, last: '\n'}
	if own.Unterminated {
		content.last = 0
	}
	st := &early{d: d, op: writeOp, content: content, sum: sum, done: make(chan struct{}), fallback: true}
	opts := atomicfile.Options{Mode: mode, Perm: 0o644, Tag: r.ID, SHA256: sum}
	go func() {
		staged, err := s.file.Stage(d, name, opts, own.Bytes)
		m.streams.give(s.owner)
		st.finish(staged, err)
	}()
	return st
}
