package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

type notification struct {
	session, method string
	params          any
}

type harness struct {
	t     *testing.T
	root  string
	db    string
	st    *store.Store
	clock *clock.Fake
	mgr   *session.Manager
	mu    sync.Mutex
	notes []notification
	ids   int
	// logger, if set before open, is the engine's logger.
	logger *slog.Logger
	// storeOpts are the options the store is opened with.
	storeOpts store.Options
	// tweak, if set, changes the engine's config before it opens.
	tweak func(*session.Config)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, store.Options{})
}

// newHarnessWith is newHarness on a store opened with opts.
func newHarnessWith(t *testing.T, opts store.Options) *harness {
	t.Helper()
	return newHarnessTweaked(t, opts, nil)
}

// newHarnessTweaked is newHarnessWith an engine config changed by tweak.
func newHarnessTweaked(t *testing.T, opts store.Options, tweak func(*session.Config)) *harness {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: root, db: filepath.Join(t.TempDir(), "orion.db"), clock: clock.NewFake(time.Unix(1_700_000_000, 0)), storeOpts: opts, tweak: tweak}
	h.open()
	t.Cleanup(h.close)
	return h
}

// open (re)starts the engine on the same store file, as a daemon restart
// would.
func (h *harness) open() {
	h.t.Helper()
	st, err := store.Open(h.db, h.storeOpts)
	if err != nil {
		h.t.Fatal(err)
	}
	guard, err := pathguard.New([]string{h.root})
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := session.Config{
		Store: st, Guard: guard, Clock: h.clock, Logger: h.logger,
		NewID: func() string {
			// Writes run concurrently in some tests: the counter is shared.
			h.mu.Lock()
			defer h.mu.Unlock()
			h.ids++
			return fmt.Sprintf("00000000-0000-4000-8000-%012d", h.ids)
		},
		Notify: func(id, method string, params any) {
			h.mu.Lock()
			h.notes = append(h.notes, notification{id, method, params})
			h.mu.Unlock()
		},
	}
	if h.tweak != nil {
		h.tweak(&cfg)
	}
	mgr, err := session.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.st, h.mgr = st, mgr
}

func (h *harness) close() {
	if h.mgr != nil {
		h.mgr.Close()
		h.st.Close()
		h.mgr, h.st = nil, nil
	}
}

func (h *harness) notified(method string) []notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []notification
	for _, n := range h.notes {
		if n.method == method {
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) begin(p protocol.BeginParams) protocol.BeginResult {
	h.t.Helper()
	if p.WorkspaceRoot == "" {
		p.WorkspaceRoot = h.root
	}
	res, err := h.mgr.Begin(p)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *harness) append(id string, chunks ...string) protocol.AppendResult {
	h.t.Helper()
	info, err := h.mgr.Get(id)
	if err != nil {
		h.t.Fatal(err)
	}
	var last protocol.AppendResult
	for i, c := range chunks {
		if last, err = h.mgr.Append(protocol.AppendParams{SessionID: id, Seq: info.LastSeq + uint64(i) + 1, Chunk: c}); err != nil {
			h.t.Fatal(err)
		}
	}
	return last
}

func (h *harness) read(name string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.root, name))
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func code(err error) (int64, string) {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Code, pe.Data.Reason
	}
	return 0, ""
}

func TestIdlePromptThenAutoFinalizeKeepsTruncatedContent(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "doc.md", Operation: protocol.OpCreate})
	h.append(b.SessionID, "# Title\n", "line two\nhalf a li")

	h.clock.Advance(1900 * time.Millisecond)
	if n := h.notified(protocol.NotifySessionIdle); len(n) != 0 {
		t.Fatalf("idle sent before the idle period: %+v", n)
	}
	h.clock.Advance(200 * time.Millisecond)
	idle := h.notified(protocol.NotifySessionIdle)
	if len(idle) != 1 {
		t.Fatalf("got %d idle notifications, want 1", len(idle))
	}
	prompt := idle[0].params.(protocol.IdleNotification).Prompt
	if !strings.Contains(prompt, b.EndMarker) || !strings.Contains(prompt, "otherwise continue") {
		t.Fatalf("idle prompt %q does not name the marker and the choice", prompt)
	}

	h.clock.Advance(session.DefaultAutoFinalize)
	tr := h.notified(protocol.NotifySessionTruncated)
	if len(tr) != 1 {
		t.Fatalf("got %d truncated notifications, want 1", len(tr))
	}
	tc := tr[0].params.(protocol.TruncationContext)
	if tc.Lines != 3 || !strings.HasSuffix(tc.Tail, "half a li") {
		t.Fatalf("truncation context %+v: want 3 lines ending with the cut line", tc)
	}
	if want := "Continue writing doc.md from the middle of line 3"; !strings.Contains(tc.ContinuePrompt, want) {
		t.Fatalf("continue prompt %q lacks %q", tc.ContinuePrompt, want)
	}
	if _, err := os.Stat(filepath.Join(h.root, "doc.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("truncated content was written over the target: %v", err)
	}
	info, _ := h.mgr.Get(b.SessionID)
	if info.Stage != protocol.StageTruncated || info.Bytes != int64(len("# Title\nline two\nhalf a li")) {
		t.Fatalf("session after auto-finalize: %+v", info)
	}
	// A client that saw neither notification can still resend its last
	// chunk: it is acknowledged, not refused.
	if _, err := h.mgr.Append(protocol.AppendParams{SessionID: b.SessionID, Seq: 2, Chunk: "line two\nhalf a li"}); err != nil {
		t.Fatalf("retried chunk after truncation: %v", err)
	}
}

func TestChunksResetTheIdleTimer(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate})
	for range 5 {
		h.clock.Advance(1500 * time.Millisecond)
		h.append(b.SessionID, "more\n")
	}
	if n := h.notified(protocol.NotifySessionIdle); len(n) != 0 {
		t.Fatalf("idle sent while chunks kept arriving: %d", len(n))
	}
}

func TestMarkerSeenSessionIsWrittenAtAutoFinalize(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate})
	h.append(b.SessionID, "done\n"+b.EndMarker+"\n")
	h.clock.Advance(session.DefaultAutoFinalize + time.Second)
	if got := h.read("a.txt"); got != "done\n" {
		t.Fatalf("file %q", got)
	}
	if n := h.notified(protocol.NotifySessionIdle); len(n) != 0 {
		t.Fatalf("idle prompt sent after the marker arrived")
	}
	if n := h.notified(protocol.NotifySessionFinalized); len(n) != 1 {
		t.Fatalf("got %d finalized notifications, want 1", len(n))
	}
}

func TestContinuationWritesTheWholeFileOnce(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "app.go", Operation: protocol.OpCreate, ExpectedLines: 5})
	h.append(b.SessionID, "package main\n\nfunc main() {\n\tprintln(\"he")
	h.clock.Advance(session.DefaultAutoFinalize)

	next, err := h.mgr.Continue(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(next.Instructions, "Continue writing app.go from the middle of line 4") || !strings.Contains(next.Instructions, next.EndMarker) {
		t.Fatalf("continuation instructions %q", next.Instructions)
	}
	if _, err := h.mgr.Continue(b.SessionID); err == nil {
		t.Fatal("a session was continued twice")
	}
	h.append(next.SessionID, "llo\")\n}\n", next.EndMarker+"\n")
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: next.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	want := "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"
	if got := h.read("app.go"); got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	if res.Lines != 5 || res.Bytes != int64(len(want)) || len(res.ContinuedSessions) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("summary %+v", res)
	}
	first, _ := h.mgr.Get(b.SessionID)
	if first.Stage != protocol.StageCompleted || first.ContinuedBy != next.SessionID {
		t.Fatalf("continued session: %+v", first)
	}
}

func TestExpectedLinesMismatchIsReported(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate, ExpectedLines: 10})
	h.append(b.SessionID, "one\ntwo\n"+b.EndMarker)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Code != "possible_truncation" {
		t.Fatalf("warnings %+v, want possible_truncation", res.Warnings)
	}
}

func TestIncompleteFilePolicy(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "cfg.json"), []byte("{\"old\": true}\n"), 0o600)
	b := h.begin(protocol.BeginParams{TargetFile: "cfg.json", Operation: protocol.OpOverwrite, TruncationPolicy: protocol.TruncationIncompleteFile})
	h.append(b.SessionID, "{\"new\": ")
	h.clock.Advance(session.DefaultAutoFinalize)
	if got := h.read("cfg.json"); got != "{\"old\": true}\n" {
		t.Fatalf("target changed to %q", got)
	}
	if got := h.read("cfg.json.incomplete"); got != "{\"new\": " {
		t.Fatalf(".incomplete sibling %q", got)
	}
}

func TestResumeSaysWhereToContinue(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate})
	h.append(b.SessionID, "1\n2\n", "3\n4\n5\n6\n7\n")
	res, err := h.mgr.Resume(b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if res.NextSeq != 3 || res.LastSeq != 2 || res.Lines != 7 || res.Tail != "3\n4\n5\n6\n7\n" {
		t.Fatalf("resume %+v", res)
	}
	if !strings.Contains(res.ContinuePrompt, "from line 8") {
		t.Fatalf("continue prompt %q", res.ContinuePrompt)
	}
}

func TestConflictBlocksFinalizeUnlessForced(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness)
	}{
		{"WatcherEvent", func(h *harness) {
			os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("edited\n"), 0o644)
			h.mgr.TargetChanged(filepath.Join(h.root, "f.txt"), "write")
		}},
		{"HashOnly", func(h *harness) { os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("edited\n"), 0o644) }},
		{"Deleted", func(h *harness) { os.Remove(filepath.Join(h.root, "f.txt")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("original\n"), 0o644)
			b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
			h.append(b.SessionID, "new\n"+b.EndMarker)
			tt.change(h)
			_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
			if c, reason := code(err); c != protocol.CodeTargetChanged || reason != protocol.ReasonTargetChanged {
				t.Fatalf("finalize after an external change: %v", err)
			}
			if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, Force: true}); err != nil {
				t.Fatal(err)
			}
			if got := h.read("f.txt"); got != "new\n" {
				t.Fatalf("forced finalize wrote %q", got)
			}
		})
	}
}

// A change put back as it was is no change: content decides, not the
// watcher's event.
func TestChangePutBackIsNoConflict(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("original\n"), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
	h.append(b.SessionID, "new\n"+b.EndMarker)
	os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("edited\n"), 0o644)
	h.mgr.TargetChanged(filepath.Join(h.root, "f.txt"), "write")
	os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("original\n"), 0o644)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Merged || h.read("f.txt") != "new\n" {
		t.Fatalf("finalize after a change put back: merged %v, file %q", res.Merged, h.read("f.txt"))
	}
}

// An event for a target that still holds what the session began from (a
// late event of an earlier write, a roll-back) is not a conflict.
func TestLateEventForAnUnchangedTargetIsNoConflict(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("original\n"), 0o644)
	b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
	h.append(b.SessionID, "new\n"+b.EndMarker)
	h.mgr.TargetChanged(filepath.Join(h.root, "f.txt"), "create")
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
		t.Fatal(err)
	}
}

// setStage rewrites a journaled record's stage, to reproduce the state a
// crash leaves behind mid-finalize.
func (h *harness) setStage(id string, stage protocol.Stage) {
	h.t.Helper()
	meta, err := h.st.Meta(id)
	if err != nil {
		h.t.Fatal(err)
	}
	var rec map[string]any
	json.Unmarshal(meta, &rec)
	rec["stage"] = stage
	meta, _ = json.Marshal(rec)
	if err := h.st.PutMeta(id, meta); err != nil {
		h.t.Fatal(err)
	}
}

func TestRestartAfterCrashMidFinalize(t *testing.T) {
	for _, landed := range []bool{false, true} {
		t.Run(fmt.Sprintf("RenameLanded=%v", landed), func(t *testing.T) {
			h := newHarness(t)
			os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("old\n"), 0o640)
			b := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpAppend})
			h.append(b.SessionID, "new\n", b.EndMarker+"\n")
			h.setStage(b.SessionID, protocol.StageFinalizing)
			temp := filepath.Join(h.root, ".orion-tmp-"+b.SessionID+"-123-f.txt")
			os.WriteFile(temp, []byte("old\nne"), 0o600)
			if landed {
				os.WriteFile(filepath.Join(h.root, "f.txt"), []byte("old\nnew\n"), 0o640)
			}
			h.close()
			h.open()

			if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temp file of the interrupted write survived the restart: %v", err)
			}
			info, _ := h.mgr.Get(b.SessionID)
			if landed {
				if info.Stage != protocol.StageCompleted || info.Result == nil || info.Result.Bytes != 4 {
					t.Fatalf("landed write not completed on restart: %+v", info)
				}
				return
			}
			if info.Stage != protocol.StageStreaming {
				t.Fatalf("unlanded write: stage %s, want streaming (finalizable)", info.Stage)
			}
			if got := h.read("f.txt"); got != "old\n" {
				t.Fatalf("target %q before the retried finalize", got)
			}
			if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
				t.Fatal(err)
			}
			if got := h.read("f.txt"); got != "old\nnew\n" {
				t.Fatalf("target %q after the retried finalize", got)
			}
		})
	}
}

// A session that ended truncated is over: a later write of its target (by
// another session, say) is recorded for a continuation to find, but is no
// warning in the log; an open session's is.
func TestTargetChangeWarnsOnlyForOpenSessions(t *testing.T) {
	h := newHarness(t)
	var logs lockedLog
	h.close()
	h.logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h.open()
	path := filepath.Join(h.root, "f.txt")
	os.WriteFile(path, []byte("original\n"), 0o644)

	cut := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
	h.append(cut.SessionID, "half of it")
	h.clock.Advance(session.DefaultAutoFinalize + 3*time.Second)
	if info, _ := h.mgr.Get(cut.SessionID); info.Stage != protocol.StageTruncated {
		t.Fatalf("stage %s, want truncated", info.Stage)
	}
	os.WriteFile(path, []byte("written by a later session\n"), 0o644)
	h.mgr.TargetChanged(path, "create")
	if s := logs.String(); strings.Contains(s, "WARN") {
		t.Fatalf("a change after the session ended truncated was logged as a warning:\n%s", s)
	}
	if info, _ := h.mgr.Get(cut.SessionID); info.Conflict != "create" {
		t.Fatalf("conflict %q, want the change recorded", info.Conflict)
	}

	open := h.begin(protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpOverwrite})
	h.append(open.SessionID, "new\n")
	os.WriteFile(path, []byte("edited\n"), 0o644)
	h.mgr.TargetChanged(path, "write")
	if s := logs.String(); !strings.Contains(s, `level=WARN msg="target changed during the session" session=`+open.SessionID) {
		t.Fatalf("no warning for an open session's target:\n%s", s)
	}
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWholeFileCommits counts the store's syncs of a whole-file overwrite,
// the daemon's most common write: begin, one append, finalize. Begin
// journals nothing: its record and the target's content for a merge go
// with the first chunk; the append and the finalize (with the backup of
// the old file) each take one sync of the content log, and none waits for
// a bbolt commit: their index entries, and the finalize's completion,
// ride a later one.
func TestWholeFileCommits(t *testing.T) {
	// The deferred entries must not commit by themselves while the test
	// is between steps.
	h := newHarnessWith(t, store.Options{DeferDelay: time.Hour})
	path := filepath.Join(h.root, "f.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stats := func() store.Stats {
		st, err := h.st.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	write := func(content string) string {
		b := h.begin(protocol.BeginParams{Intent: "t", TargetFile: path, Operation: protocol.OpOverwrite})
		h.append(b.SessionID, content)
		if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
			t.Fatal(err)
		}
		return b.SessionID
	}
	start := stats()
	first := write("first\n")
	second := write("second\n")
	end := stats()
	if got := end.Commits - start.Commits; got != 0 {
		t.Errorf("two writes took %d bbolt commits, want 0", got)
	}
	if got := end.Log.Syncs - start.Log.Syncs; got != 4 {
		t.Errorf("two writes took %d syncs of the content log, want 4 (append, finalize, twice)", got)
	}
	// Both are journaled as completed after a restart (Close commits the
	// second's completion), and each undo has its backup.
	h.close()
	h.open()
	for _, id := range []string{first, second} {
		if info, err := h.mgr.Get(id); err != nil || info.Stage != protocol.StageCompleted {
			t.Fatalf("session %s after reopening: %+v, %v", id, info, err)
		}
	}
	if _, err := h.mgr.Undo(second); err != nil {
		t.Fatal(err)
	}
	if got := h.read("f.txt"); got != "first\n" {
		t.Fatalf("undo restored %q, want the first write's content", got)
	}
}

// TestBegunSessionsHoldBoundedContent: a begin that journals nothing keeps
// the target's content at begin (for a merge) in memory until the
// session's first chunk journals it. What all such sessions hold is
// bounded: past the bound a begin journals its session at once, and a
// first chunk makes room again.
func TestBegunSessionsHoldBoundedContent(t *testing.T) {
	h := newHarnessWith(t, store.Options{DeferDelay: time.Hour})
	path := filepath.Join(h.root, "big.txt")
	// Under the 4 MiB a merge keeps; 8 of them fit the 32 MiB bound.
	line := strings.Repeat("x", 99) + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 40_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	syncs := func() int64 {
		st, err := h.st.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return int64(st.Log.Syncs) + int64(st.Commits)
	}
	begin := func() (string, int64) {
		before := syncs()
		b := h.begin(protocol.BeginParams{Intent: "t", TargetFile: path, Operation: protocol.OpOverwrite})
		return b.SessionID, syncs() - before
	}
	var ids []string
	for i := range 8 {
		id, n := begin()
		if n != 0 {
			t.Fatalf("begin %d under the bound took %d syncs, want 0", i+1, n)
		}
		ids = append(ids, id)
	}
	if _, n := begin(); n == 0 {
		t.Fatal("a begin past the bound journaled nothing: its content at begin would be held in memory")
	}
	h.append(ids[0], "first chunk\n")
	if _, n := begin(); n != 0 {
		t.Fatalf("a begin after a first chunk made room took %d syncs, want 0", n)
	}
}

// TestFinalizeWithNoChunks: a session finalized before any chunk (an
// empty file, or a stream whose only chunk failed) writes an empty file.
// A begin journals nothing, so there is no journal to read its content
// from, and that must not read as an I/O error.
func TestFinalizeWithNoChunks(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.root, "empty.txt")
	b := h.begin(protocol.BeginParams{Intent: "t", TargetFile: path, Operation: protocol.OpCreate})
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true})
	if err != nil {
		t.Fatalf("finalize with no chunks: %v", err)
	}
	if res.Stage != protocol.StageCompleted {
		t.Fatalf("stage %q, want completed", res.Stage)
	}
	if got := h.read("empty.txt"); got != "" {
		t.Fatalf("file holds %q, want it empty", got)
	}
	h.close()
	h.open()
	st, err := h.mgr.Get(b.SessionID)
	if err != nil {
		t.Fatalf("status after reopen: %v", err)
	}
	if st.Stage != protocol.StageCompleted {
		t.Fatalf("after reopen stage %q, want completed", st.Stage)
	}
}
