package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// TestSessionCaps: past --max-client-sessions one client is refused with
// too_many_sessions while others still begin; past --max-sessions everyone
// is; a finished session frees its place; a transaction must fit whole.
func TestSessionCaps(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) {
		c.MaxSessions, c.MaxClientSessions = 5, 2
	})
	n := 0
	begin := func(owner string) (protocol.BeginResult, error) {
		n++
		return h.mgr.BeginAs(owner, protocol.BeginParams{TargetFile: fmt.Sprintf("f%d.txt", n),
			WorkspaceRoot: h.root, Operation: protocol.OpCreate})
	}
	must := func(owner string) protocol.BeginResult {
		t.Helper()
		r, err := begin(owner)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	refused := func(owner string, limit int64) {
		t.Helper()
		_, err := begin(owner)
		if c, reason := code(err); c != protocol.CodeTooManySessions || reason != protocol.ReasonTooManySessions {
			t.Fatalf("begin for %q: %v, want too_many_sessions", owner, err)
		}
		if pe := err.(*protocol.Error); pe.Data.Limit != limit {
			t.Fatalf("limit %d, want %d: %v", pe.Data.Limit, limit, pe)
		}
	}
	a1 := must("pid 1")
	must("pid 1")
	refused("pid 1", 2)
	must("pid 2")
	if _, err := h.mgr.TxBeginAs("pid 2", protocol.TxBeginParams{WorkspaceRoot: h.root, Files: []protocol.BeginParams{
		{TargetFile: "t1.txt", Operation: protocol.OpCreate}, {TargetFile: "t2.txt", Operation: protocol.OpCreate}}}); !strings.Contains(fmt.Sprint(err), "too_many_sessions") {
		t.Fatalf("a transaction over the client's cap: %v", err)
	}
	must("")
	must("pid 3")
	refused("pid 4", 5)
	if _, err := h.mgr.Abort(a1.SessionID); err != nil {
		t.Fatal(err)
	}
	must("pid 4")
	refused("", 5)
	// A restarted daemon counts what it loaded against the daemon's cap.
	h.close()
	h.open()
	refused("pid 9", 5)
}

// TestListPages: session.list returns pages of at most limit sessions in
// List's order with a cursor to the next, every session exactly once.
func TestListPages(t *testing.T) {
	h := newHarness(t)
	const total = 23
	for i := range total {
		h.begin(protocol.BeginParams{TargetFile: fmt.Sprintf("f%02d.txt", i), Operation: protocol.OpCreate})
	}
	want := h.mgr.List(false)
	var got []protocol.SessionInfo
	cursor, pages := "", 0
	for {
		res, err := h.mgr.ListPage(context.Background(), protocol.ListParams{Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Sessions) > 10 {
			t.Fatalf("page of %d sessions, limit 10", len(res.Sessions))
		}
		got = append(got, res.Sessions...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if pages != 3 || len(got) != total {
		t.Fatalf("%d pages, %d sessions; want 3 and %d", pages, len(got), total)
	}
	for i := range want {
		if got[i].SessionID != want[i].SessionID {
			t.Fatalf("session %d: %s, want %s", i, got[i].SessionID, want[i].SessionID)
		}
	}
	res, err := h.mgr.ListPage(context.Background(), protocol.ListParams{})
	if err != nil || len(res.Sessions) != total || res.NextCursor != "" {
		t.Fatalf("default page: %d sessions, cursor %q, %v", len(res.Sessions), res.NextCursor, err)
	}
	if _, err := h.mgr.ListPage(context.Background(), protocol.ListParams{Cursor: "not-a-cursor"}); !strings.Contains(fmt.Sprint(err), "malformed_params") {
		t.Fatalf("a bad cursor: %v", err)
	}
}

// TestListPageBoundedBySize: with the largest intents, a page stops at
// MaxListReplyBytes before its count limit.
func TestListPageBoundedBySize(t *testing.T) {
	if testing.Short() {
		t.Skip("begins 1,100 sessions")
	}
	h := newHarness(t)
	intent := strings.Repeat("i", protocol.MaxIntentBytes)
	const total = 1100
	for i := range total {
		h.begin(protocol.BeginParams{Intent: intent, TargetFile: fmt.Sprintf("f%04d.txt", i), Operation: protocol.OpCreate})
	}
	res, err := h.mgr.ListPage(context.Background(), protocol.ListParams{Limit: protocol.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for i := range res.Sessions {
		size += len(mustJSON(t, &res.Sessions[i]))
	}
	t.Logf("first page: %d of %d sessions, %d bytes", len(res.Sessions), total, size)
	if size > protocol.MaxListReplyBytes || len(res.Sessions) == total || res.NextCursor == "" {
		t.Fatalf("page of %d sessions, %d bytes, cursor %q; want at most %d bytes and a cursor",
			len(res.Sessions), size, res.NextCursor, protocol.MaxListReplyBytes)
	}
}

type events struct {
	mu sync.Mutex
	ev []trace.Event
}

func (e *events) Record(ev trace.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

func (e *events) of(typ protocol.TraceType) []trace.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []trace.Event
	for _, ev := range e.ev {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// TestStoreCapDropsOldestBackups: overwrites of one file keep a backup
// each; under a cap the oldest go first, each traced and logged, undo of
// those says backup_dropped, and the newest still undoes.
func TestStoreCapDropsOldestBackups(t *testing.T) {
	const (
		fileSize = 600 << 10
		limit    = 4 << 20
		writes   = 12
	)
	log := &lockedWriter{w: &bytes.Buffer{}}
	ev := &events{}
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) {
		c.StoreMaxBytes = limit
		c.MaxSessionBytes = 1 << 20
		c.Trace = ev
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	var ids []string
	for i := range writes {
		content := strings.Repeat(fmt.Sprintf("%d", i%10), fileSize-1) + "\n"
		op := protocol.OpOverwrite
		if i == 0 {
			op = protocol.OpCreate
		}
		b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: op})
		for off := 0; off < len(content); off += 256 << 10 {
			h.append(b.SessionID, content[off:min(off+256<<10, len(content))])
		}
		if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.SessionID)
	}
	st, err := h.mgr.StoreStats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d overwrites of %d KiB under a cap of %d KiB: store %d KiB used, file %d KiB, %d backups dropped (%d KiB)",
		writes, fileSize>>10, limit>>10, st.Bytes>>10, st.FileBytes>>10, st.BackupsDropped, st.BackupBytesDropped>>10)
	if st.Bytes > limit {
		t.Fatalf("store uses %d bytes, over its cap of %d", st.Bytes, limit)
	}
	if st.BackupsDropped == 0 || len(ev.of(session.TraceBackupDropped)) != int(st.BackupsDropped) {
		t.Fatalf("%d backups dropped, %d traced", st.BackupsDropped, len(ev.of(session.TraceBackupDropped)))
	}
	if !strings.Contains(log.String(), "dropped the oldest undo backup") {
		t.Fatalf("no log line says a backup was dropped:\n%s", log.String())
	}
	// The first write created the file: it has no backup. The next ones
	// are the oldest backups, dropped first.
	if _, err := h.mgr.Undo(ids[1]); !strings.Contains(fmt.Sprint(err), protocol.ReasonBackupDropped) {
		t.Fatalf("undo of the oldest overwrite: %v, want backup_dropped", err)
	}
	if ev := ev.of(session.TraceBackupDropped); ev[0].SessionID != ids[1] {
		t.Fatalf("first backup dropped: %s, want the oldest %s", ev[0].SessionID, ids[1])
	}
	if _, err := h.mgr.Undo(ids[writes-1]); err != nil {
		t.Fatalf("undo of the newest write: %v", err)
	}
	if got := h.read("big.txt"); got != strings.Repeat(fmt.Sprintf("%d", (writes-2)%10), fileSize-1)+"\n" {
		t.Fatalf("undo restored %d bytes starting %q", len(got), got[:8])
	}
}

// TestStoreFullRefusesNewContent: with no backup left to drop, an append
// that would take the store over its cap is refused with store_full, and
// what was acknowledged stays.
func TestStoreFullRefusesNewContent(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) {
		c.StoreMaxBytes = 1 << 20
		c.MaxSessionBytes = 1 << 20
	})
	// Another session's content takes most of the store, so that the
	// store fills before the session reaches its own limit.
	other := h.begin(protocol.BeginParams{TargetFile: "other.txt", Operation: protocol.OpCreate})
	chunk := strings.Repeat("x", 200<<10)
	for seq := uint64(1); seq <= 3; seq++ {
		if _, err := h.mgr.Append(protocol.AppendParams{SessionID: other.SessionID, Seq: seq, Chunk: chunk}); err != nil {
			t.Fatal(err)
		}
	}
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate})
	var err error
	acked := 0
	for seq := uint64(1); seq <= 8 && err == nil; seq++ {
		if _, err = h.mgr.Append(protocol.AppendParams{SessionID: b.SessionID, Seq: seq, Chunk: chunk}); err == nil {
			acked++
		}
	}
	if _, reason := code(err); reason != protocol.ReasonStoreFull {
		t.Fatalf("after %d appends: %v, want store_full", acked, err)
	}
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	// The repair adds the missing final newline.
	if got := strings.TrimSuffix(h.read("a.txt"), "\n"); got != strings.Repeat(chunk, acked) {
		t.Fatalf("wrote %d bytes, want the %d acknowledged", len(got), acked*len(chunk))
	}
}

// TestRefusedImportLeavesNothing: a spool import refused as
// session_too_large leaves no session and no chunk in the store.
func TestRefusedImportLeavesNothing(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.MaxSessionBytes = 1 << 20 })
	id := session.ImportedID("big", h.clock.Now())
	_, err := h.mgr.Import(id, protocol.BeginParams{TargetFile: "big.txt", WorkspaceRoot: h.root, Operation: protocol.OpCreate},
		h.clock.Now(), strings.NewReader(strings.Repeat("y", 3<<20)))
	if _, reason := code(err); reason != protocol.ReasonSessionTooLarge {
		t.Fatalf("import: %v, want session_too_large", err)
	}
	if _, err := h.mgr.Get(id); err == nil {
		t.Fatal("the refused import is still a session")
	}
	st, err := h.st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 0 || st.Chunks != 0 {
		t.Fatalf("the store keeps %d sessions and %d chunks of a refused import", st.Sessions, st.Chunks)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFinishedSessionsPruned: past MaxFinishedSessions the oldest finished
// sessions are forgotten, down to 90% of the cap, and open ones stay.
func TestFinishedSessionsPruned(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.MaxFinishedSessions = 10 })
	open := h.begin(protocol.BeginParams{TargetFile: "open.txt", Operation: protocol.OpCreate})
	var first string
	for i := range 12 {
		h.clock.Advance(time.Second)
		b := h.begin(protocol.BeginParams{TargetFile: fmt.Sprintf("f%d.txt", i), Operation: protocol.OpCreate})
		if _, err := h.mgr.Abort(b.SessionID); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.SessionID
		}
	}
	h.begin(protocol.BeginParams{TargetFile: "last.txt", Operation: protocol.OpCreate})
	all := h.mgr.List(true)
	finished := 0
	for _, s := range all {
		if s.Stage == protocol.StageAborted {
			finished++
		}
	}
	if finished > 10 || finished < 9 {
		t.Fatalf("%d finished sessions kept, want at most 10 and at least 9", finished)
	}
	if _, err := h.mgr.Get(first); err == nil {
		t.Fatal("the oldest finished session was kept")
	}
	if _, err := h.mgr.Get(open.SessionID); err != nil {
		t.Fatalf("an open session was pruned: %v", err)
	}
}
