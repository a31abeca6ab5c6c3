package checkpoint_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/checkpoint"
	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

type env struct {
	t     testing.TB
	ws    string
	state string
	st    *store.Store
	e     *checkpoint.Engine
	cfg   checkpoint.Config
}

func newEnvB(b *testing.B) *env { return newEnv(b) }

func newEnv(t testing.TB, mod ...func(*checkpoint.Config)) *env {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	state := filepath.Join(base, "state")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(state, 0o700)
	ws, _ = filepath.EvalSymlinks(ws)
	state, _ = filepath.EvalSymlinks(state)
	en := &env{t: t, ws: ws, state: state}
	en.open(mod...)
	return en
}

func (en *env) open(mod ...func(*checkpoint.Config)) {
	t := en.t
	st, err := store.Open(filepath.Join(en.state, "orion.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blobstore.OpenBolt(st)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pathguard.NewProtected([]string{filepath.Dir(en.ws)}, pathguard.Protection{Default: []string{".git", ".claude"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := pathguard.New([]string{filepath.Dir(en.ws)})
	fsys, _ := confine.New(g)
	rawFS, _ := confine.New(raw)
	cfg := checkpoint.Config{Store: st, Blobs: blobs, Guard: g, FS: fsys, RawFS: rawFS, StateDir: en.state,
		Home: "/nonexistent-home", GlobalExcludes: "/nonexistent"}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := checkpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	en.st, en.e, en.cfg = st, e, cfg
	t.Cleanup(en.close)
}

func (en *env) close() {
	if en.e != nil {
		en.e.Close()
		en.st.Close()
		en.e = nil
	}
}

func (en *env) write(rel, content string) {
	p := filepath.Join(en.ws, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		en.t.Fatal(err)
	}
}

func (en *env) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(en.ws, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (en *env) begin() string {
	en.t.Helper()
	r, err := en.e.Begin(protocol.TurnBeginParams{WorkspaceRoot: en.ws, Agent: "test"})
	if err != nil {
		en.t.Fatal(err)
	}
	return r.TurnID
}

func (en *env) end(id string) protocol.TurnInfo {
	en.t.Helper()
	ti, err := en.e.End(id)
	if err != nil {
		en.t.Fatal(err)
	}
	return ti
}

// snapshot reads every file, link and directory of the workspace (but
// .git) as text, to compare states byte for byte.
func snapshot(t *testing.T, root string) string {
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		info, _ := os.Lstat(p)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(rel + " -> " + l + "\n")
		case info.IsDir():
			b.WriteString(rel + "/ " + info.Mode().Perm().String() + "\n")
		default:
			c, _ := os.ReadFile(p)
			b.WriteString(rel + " " + info.Mode().Perm().String() + " " + string(c) + "\n")
		}
		return nil
	})
	return b.String()
}

func TestUndoRedoEveryKindOfChange(t *testing.T) {
	en := newEnv(t)
	en.write("a.txt", "one\ntwo\nthree\n")
	en.write("gone.txt", "delete me\n")
	en.write("old-name.txt", "moved content\n")
	en.write("script.sh", "echo hi\n")
	en.write("dir/keep.txt", "keep\n")
	en.write(".gitignore", "*.log\n")
	en.write("x.log", "ignored\n")
	os.MkdirAll(filepath.Join(en.ws, ".git"), 0o755)
	en.write(".git/HEAD", "ref: refs/heads/main\n")
	before := snapshot(t, en.ws)

	id := en.begin()
	en.write("a.txt", "one\nTWO\nthree\n")
	os.Remove(filepath.Join(en.ws, "gone.txt"))
	os.Rename(filepath.Join(en.ws, "old-name.txt"), filepath.Join(en.ws, "new-name.txt"))
	os.Chmod(filepath.Join(en.ws, "script.sh"), 0o755)
	en.write("newdir/sub/fresh.txt", "fresh\n")
	os.Symlink("a.txt", filepath.Join(en.ws, "link"))
	en.write("x.log", "ignored, changed\n")
	en.write(".git/HEAD", "ref: refs/heads/other\n")
	ti := en.end(id)
	after := snapshot(t, en.ws)

	kinds := map[string]string{}
	for _, f := range ti.Files {
		kinds[f.Path] = f.Kind
		if f.Writer != protocol.WriterOutside {
			t.Errorf("%s: writer %q, want outside", f.Path, f.Writer)
		}
	}
	want := map[string]string{"a.txt": "modified", "gone.txt": "deleted", "new-name.txt": "renamed", "script.sh": "mode",
		"newdir": "created", "newdir/sub": "created", "newdir/sub/fresh.txt": "created", "link": "created"}
	for p, k := range want {
		if kinds[p] != k {
			t.Errorf("%s: kind %q, want %q (all: %v)", p, kinds[p], k, kinds)
		}
	}
	if _, ok := kinds["x.log"]; ok {
		t.Error("an ignored file is listed as changed")
	}

	res, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Outcome != protocol.UndoReverted {
			t.Errorf("%s: %s (%s), want reverted", f.Path, f.Outcome, f.Reason)
		}
	}
	got := snapshot(t, en.ws)
	// The ignored file and .git stay as they are now.
	wantAfterUndo := strings.Replace(before, "x.log -rw-r--r-- ignored\n", "x.log -rw-r--r-- ignored, changed\n", 1)
	wantAfterUndo = strings.Replace(wantAfterUndo, ".git/HEAD", ".git/HEAD", 1)
	if got != wantAfterUndo {
		t.Errorf("after undo:\n%s\nwant:\n%s", got, wantAfterUndo)
	}
	if _, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id}); !isReason(err, protocol.ReasonTurnUndone) {
		t.Errorf("second undo: %v, want %s", err, protocol.ReasonTurnUndone)
	}
	if _, err := en.e.Redo(protocol.TurnRedoParams{Last: true, WorkspaceRoot: en.ws}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, en.ws); got != after {
		t.Errorf("after redo:\n%s\nwant:\n%s", got, after)
	}
}

func isReason(err error, reason string) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Data.Reason == reason
}

func TestUndoKeepsLaterEdits(t *testing.T) {
	en := newEnv(t)
	lines := func(mod map[int]string) string {
		var b bytes.Buffer
		for i := 1; i <= 20; i++ {
			if s, ok := mod[i]; ok {
				b.WriteString(s + "\n")
			} else {
				b.WriteString("line " + string(rune('a'+i)) + "\n")
			}
		}
		return b.String()
	}
	en.write("merge.txt", lines(nil))
	en.write("clash.txt", lines(nil))
	id := en.begin()
	en.write("merge.txt", lines(map[int]string{2: "turn"}))
	en.write("clash.txt", lines(map[int]string{2: "turn"}))
	en.end(id)
	// The person edits after the turn: elsewhere in one, the same line in
	// the other.
	en.write("merge.txt", lines(map[int]string{2: "turn", 18: "person"}))
	en.write("clash.txt", lines(map[int]string{2: "person"}))
	clashBefore := en.read("clash.txt")

	dry, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if en.read("merge.txt") != lines(map[int]string{2: "turn", 18: "person"}) {
		t.Error("a dry run wrote")
	}
	all, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id, AllOrNothing: true})
	if err != nil || !all.Refused {
		t.Fatalf("all_or_nothing: refused %v, %v; want refused", all.Refused, err)
	}
	if en.read("merge.txt") != lines(map[int]string{2: "turn", 18: "person"}) {
		t.Error("a refused all_or_nothing undo wrote")
	}
	res, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]protocol.UndoFileResult{}
	for _, f := range res.Files {
		out[f.Path] = f
	}
	for _, r := range [][]protocol.UndoFileResult{dry.Files, res.Files} {
		_ = r
	}
	if o := out["merge.txt"].Outcome; o != protocol.UndoMerged {
		t.Errorf("merge.txt: %s, want merged", o)
	}
	if got, want := en.read("merge.txt"), lines(map[int]string{18: "person"}); got != want {
		t.Errorf("merge.txt after undo:\n%s\nwant:\n%s", got, want)
	}
	if o := out["clash.txt"]; o.Outcome != protocol.UndoLeft || len(o.Hunks) == 0 {
		t.Errorf("clash.txt: %s with %d hunks, want left with hunks", o.Outcome, len(o.Hunks))
	}
	if en.read("clash.txt") != clashBefore {
		t.Error("clash.txt was touched")
	}
}

// A turn open across a restart of the engine ends with what changed on
// both sides of it, and still names the Orion session that wrote a file
// before the restart.
func TestTurnSpansRestart(t *testing.T) {
	en := newEnv(t)
	en.write("a.txt", "a\n")
	id := en.begin()
	en.write("a.txt", "a changed before\n")
	sum := sha256.Sum256([]byte("a changed before\n"))
	en.e.SessionWrote("session-before", filepath.Join(en.ws, "a.txt"), hex.EncodeToString(sum[:]))
	en.close()
	en.write("b.txt", "b made while down\n")
	en.open()
	en.write("c.txt", "c after\n")
	ti := en.end(id)
	got := map[string]bool{}
	for _, f := range ti.Files {
		got[f.Path] = true
	}
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		if !got[p] {
			t.Errorf("%s missing from the turn's files %v", p, ti.Files)
		}
	}
	for _, f := range ti.Files {
		if f.Path == "a.txt" && f.Writer != "session-before" {
			t.Errorf("a.txt written by %q, want the session that wrote it before the restart", f.Writer)
		}
	}
	if len(ti.Sessions) != 1 || ti.Sessions[0] != "session-before" {
		t.Errorf("turn's sessions %v, want the one that wrote before the restart", ti.Sessions)
	}
	// The ended turn keeps its writers in its own record.
	left := 0
	en.st.ScanKV("checkpoint_writes", nil, func(k, v []byte) (bool, error) { left++; return true, nil })
	if left != 0 {
		t.Errorf("%d writes of the open turn kept after it ended", left)
	}
	if _, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id}); err != nil {
		t.Fatal(err)
	}
	if en.read("a.txt") != "a\n" || !strings.HasPrefix(en.read("b.txt"), "<") {
		t.Errorf("after undo: a=%q b=%q", en.read("a.txt"), en.read("b.txt"))
	}
}

func TestTooBigWorkspace(t *testing.T) {
	en := newEnv(t, func(c *checkpoint.Config) { c.MaxWorkspaceFiles = 3 })
	for i := range 5 {
		en.write(string(rune('a'+i))+".txt", "x")
	}
	r, err := en.e.Begin(protocol.TurnBeginParams{WorkspaceRoot: en.ws})
	if err != nil {
		t.Fatal(err)
	}
	if r.Recording != protocol.RecordingTooBig || r.CheckpointID != "" || r.Warning == "" {
		t.Errorf("begin: %+v, want too_big with a warning and no checkpoint", r)
	}
	if n, _ := en.cfg.Blobs.Stats(); n != 0 {
		t.Errorf("%d contents stored for a workspace too big to record, want none", n)
	}
	en.end(r.TurnID)
	if _, err := en.e.Undo(protocol.TurnUndoParams{TurnID: r.TurnID}); !isReason(err, protocol.ReasonTurnUnrecorded) {
		t.Errorf("undo: %v, want %s", err, protocol.ReasonTurnUnrecorded)
	}
}

func TestHomeIsNeverAWorkspace(t *testing.T) {
	en := newEnv(t, func(c *checkpoint.Config) { c.Home = "" })
	en.close()
	en.open(func(c *checkpoint.Config) { c.Home = en.ws })
	if _, err := en.e.Begin(protocol.TurnBeginParams{WorkspaceRoot: en.ws}); !isReason(err, protocol.ReasonWorkspaceForbidden) {
		t.Errorf("begin in home: %v, want %s", err, protocol.ReasonWorkspaceForbidden)
	}
}

type recorder struct {
	mu     sync.Mutex
	events []trace.Event
}

func (r *recorder) Record(e trace.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Turns older than the retention go, with the contents only they held;
// a pinned checkpoint keeps its turn; what went is in the trace.
func TestRetention(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &recorder{}
	en := newEnv(t, func(c *checkpoint.Config) {
		c.Clock, c.Trace, c.Retention = clk, rec, 24*time.Hour
	})
	en.write("a.txt", "start\n")
	old := en.begin()
	en.write("a.txt", "only the old turn wrote this\n")
	en.end(old)
	clk.Advance(48 * time.Hour)
	en.write("a.txt", "later\n")
	fresh := en.begin()
	en.write("a.txt", "fresh turn\n")
	en.end(fresh)
	blobs := en.cfg.Blobs.(*blobstore.Bolt)
	if err := en.e.Retain(); err != nil {
		t.Fatal(err)
	}
	if _, err := en.e.Get(context.Background(), protocol.TurnGetParams{TurnID: old}); !isReason(err, protocol.ReasonTurnNotFound) {
		t.Errorf("the old turn: %v, want dropped", err)
	}
	if _, err := en.e.Get(context.Background(), protocol.TurnGetParams{TurnID: fresh}); err != nil {
		t.Errorf("the fresh turn: %v, want kept", err)
	}
	// "start" was held only by the old turn (and by checkpoints as old).
	if ok, _ := blobs.Has(sha256.Sum256([]byte("start\n"))); ok {
		t.Error("the content only the dropped turn held is still stored")
	}
	for _, kept := range []string{"later\n", "fresh turn\n"} {
		if ok, _ := blobs.Has(sha256.Sum256([]byte(kept))); !ok {
			t.Errorf("%q, held by the kept turn, is gone", kept)
		}
	}
	if _, err := en.e.Undo(protocol.TurnUndoParams{TurnID: fresh}); err != nil || en.read("a.txt") != "later\n" {
		t.Errorf("undo of the kept turn: %v, a.txt %q", err, en.read("a.txt"))
	}
	dropped := false
	for _, e := range rec.events {
		if e.Type == protocol.TraceCheckpointDropped && e.Fields["turns"] == 1 {
			dropped = true
		}
	}
	if !dropped {
		t.Errorf("no %s event for the dropped turn: %v", protocol.TraceCheckpointDropped, rec.events)
	}
}

// A protected path goes back to the content recorded at the turn's
// start, its owner's own; a merge that would write anything else there is
// refused and the file left.
func TestProtectedPathOnlyBackToItsStart(t *testing.T) {
	en := newEnv(t)
	settings := func(s string) string {
		return "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n  \"e\": 5,\n  \"f\": \"" + s + "\"\n}\n"
	}
	en.write(".claude/settings.json", settings("mine"))
	en.write(".claude/other.json", settings("mine"))
	id := en.begin()
	en.write(".claude/settings.json", settings("agent"))
	en.write(".claude/other.json", strings.Replace(settings("mine"), "\"a\": 1", "\"a\": 100", 1))
	en.end(id)
	// A later edit elsewhere in other.json: reverting the turn would need
	// a merged content, which is not the recorded start.
	en.write(".claude/other.json", strings.Replace(strings.Replace(settings("mine"), "\"a\": 1", "\"a\": 100", 1), "mine", "later", 1))
	res, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]protocol.UndoFileResult{}
	for _, f := range res.Files {
		out[f.Path] = f
	}
	if o := out[".claude/settings.json"].Outcome; o != protocol.UndoReverted || en.read(".claude/settings.json") != settings("mine") {
		t.Errorf("settings.json: %s, %q; want reverted to its start", o, en.read(".claude/settings.json"))
	}
	if o := out[".claude/other.json"]; o.Outcome != protocol.UndoLeft || !strings.Contains(o.Reason, "protected") {
		t.Errorf("other.json: %+v, want left as protected", o)
	}
}

func TestListPages(t *testing.T) {
	en := newEnv(t)
	var ids []string
	for i := range 3 {
		id := en.begin()
		en.write("f.txt", strings.Repeat("x", i+1))
		en.end(id)
		ids = append(ids, id)
	}
	p1, err := en.e.List(context.Background(), protocol.TurnListParams{WorkspaceRoot: en.ws, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(p1.Turns) != 2 || p1.Turns[0].TurnID != ids[2] || p1.Turns[1].TurnID != ids[1] || p1.NextCursor == "" {
		t.Fatalf("first page: %d turns, cursor %q; want the two newest and a cursor", len(p1.Turns), p1.NextCursor)
	}
	p2, err := en.e.List(context.Background(), protocol.TurnListParams{WorkspaceRoot: en.ws, Limit: 2, Cursor: p1.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(p2.Turns) != 1 || p2.Turns[0].TurnID != ids[0] || p2.NextCursor != "" {
		t.Fatalf("second page: %+v; want the oldest turn and no cursor", p2)
	}
}

// A listing or a turn's diffs for a caller that is gone stop with its
// context's error.
func TestListAndDiffsStopForACallerGone(t *testing.T) {
	en := newEnv(t)
	id := en.begin()
	en.write("f.txt", "changed\n")
	en.end(id)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := en.e.List(ctx, protocol.TurnListParams{WorkspaceRoot: en.ws}); !errors.Is(err, context.Canceled) {
		t.Errorf("turn list for a caller gone: %d turns, %v; want context.Canceled", len(res.Turns), err)
	}
	if ti, err := en.e.Get(ctx, protocol.TurnGetParams{TurnID: id, Diffs: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("turn diffs for a caller gone: %d files, %v; want context.Canceled", len(ti.Files), err)
	}
	if _, err := en.e.Get(context.Background(), protocol.TurnGetParams{TurnID: id, Diffs: true}); err != nil {
		t.Errorf("turn diffs for a caller still there: %v", err)
	}
}

// A turn that put a directory where a file was, and a file where a
// directory was, is undone whole.
func TestUndoTypeChanges(t *testing.T) {
	en := newEnv(t)
	en.write("was-file", "a file\n")
	en.write("was-dir/inner.txt", "inner\n")
	before := snapshot(t, en.ws)
	id := en.begin()
	os.Remove(filepath.Join(en.ws, "was-file"))
	en.write("was-file/now-inside.txt", "x\n")
	os.RemoveAll(filepath.Join(en.ws, "was-dir"))
	en.write("was-dir", "now a file\n")
	en.end(id)
	res, err := en.e.Undo(protocol.TurnUndoParams{TurnID: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Outcome != protocol.UndoReverted {
			t.Errorf("%s: %s (%s)", f.Path, f.Outcome, f.Reason)
		}
	}
	if got := snapshot(t, en.ws); got != before {
		t.Errorf("after undo:\n%s\nwant:\n%s", got, before)
	}
}
