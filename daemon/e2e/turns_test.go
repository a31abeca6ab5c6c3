package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/checkpoint"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// tree reads every file, link and directory under root (but .git) with
// its mode, as one text, to compare two states byte for byte.
func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, "%s -> %s\n", rel, l)
		case info.IsDir():
			fmt.Fprintf(&b, "%s/ %v\n", rel, info.Mode().Perm())
		default:
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %v %q\n", rel, info.Mode().Perm(), c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func beginTurn(t *testing.T, c *client.Client, root string) protocol.TurnBeginResult {
	t.Helper()
	r, err := c.TurnBegin(testCtx(t), protocol.TurnBeginParams{WorkspaceRoot: root, Agent: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A turn that writes through Orion and through a shell (sed -i, rm, mv, a
// new directory, chmod +x, a symlink) is undone byte for byte, and redone.
func TestTurnUndoRedoEveryWriter(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ws := filepath.Join(d.Root, "project")
	writeFiles(t, ws, map[string]string{
		"main.go":      "package main\n\nfunc main() {}\n",
		"config.txt":   "color = red\nsize = 3\n",
		"obsolete.txt": "to be removed\n",
		"old.txt":      "renamed by the turn\n",
		"run.sh":       "echo run\n",
		".gitignore":   "*.log\n",
		"build.log":    "ignored\n",
	})
	before := tree(t, ws)

	b := beginTurn(t, c, ws)
	if b.CheckpointID == "" || b.Recording != protocol.RecordingWatching {
		t.Fatalf("turn.begin: %+v, want a checkpoint, watching", b)
	}
	w, err := c.Write(testCtx(t), protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "agent edit",
		TargetFile: filepath.Join(ws, "main.go"), Operation: protocol.OpOverwrite},
		Content: "package main\n\nfunc main() { println(1) }\n"})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.Get(testCtx(t), w.SessionID); err != nil || info.TurnID != b.TurnID {
		t.Errorf("the session's turn_id %q (%v), want the open turn %s", info.TurnID, err, b.TurnID)
	}
	sh(t, ws, `sed -i 's/red/blue/' config.txt && rm obsolete.txt && mv old.txt new.txt &&
		mkdir -p gen/sub && printf 'generated\n' > gen/sub/out.txt && chmod +x run.sh && ln -s main.go link.go &&
		printf 'more\n' >> build.log`)
	ti, err := c.TurnEnd(testCtx(t), b.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	after := tree(t, ws)
	got := map[string]protocol.TurnFile{}
	for _, f := range ti.Files {
		got[f.Path] = f
	}
	want := map[string]string{"main.go": "modified", "config.txt": "modified", "obsolete.txt": "deleted",
		"new.txt": "renamed", "gen": "created", "gen/sub": "created", "gen/sub/out.txt": "created",
		"run.sh": "mode", "link.go": "created"}
	for p, k := range want {
		if got[p].Kind != k {
			t.Errorf("%s: kind %q, want %q", p, got[p].Kind, k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("turn files %v, want exactly %v", ti.Files, want)
	}
	if got["main.go"].Writer != w.SessionID || got["config.txt"].Writer != protocol.WriterOutside {
		t.Errorf("writers: main.go %q (want %s), config.txt %q (want outside)", got["main.go"].Writer, w.SessionID, got["config.txt"].Writer)
	}
	if len(ti.Sessions) != 1 || ti.Sessions[0] != w.SessionID {
		t.Errorf("turn sessions %v, want [%s]", ti.Sessions, w.SessionID)
	}
	if got["new.txt"].From != "old.txt" {
		t.Errorf("rename from %q, want old.txt", got["new.txt"].From)
	}
	full, err := c.TurnGet(testCtx(t), protocol.TurnGetParams{TurnID: b.TurnID, Diffs: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range full.Files {
		if f.Path == "config.txt" && !strings.Contains(f.Diff, "-color = red\n+color = blue\n") {
			t.Errorf("config.txt diff:\n%s", f.Diff)
		}
	}
	list, err := c.TurnList(testCtx(t), protocol.TurnListParams{WorkspaceRoot: ws})
	if err != nil || len(list.Turns) != 1 || list.Turns[0].TurnID != b.TurnID {
		t.Fatalf("turn.list: %+v, %v", list, err)
	}

	u, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{Last: true, WorkspaceRoot: ws})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range u.Files {
		if f.Outcome != protocol.UndoReverted {
			t.Errorf("undo %s: %s (%s)", f.Path, f.Outcome, f.Reason)
		}
	}
	wantBefore := strings.Replace(before, `"ignored\n"`, `"ignored\nmore\n"`, 1)
	if got := tree(t, ws); got != wantBefore {
		t.Errorf("after undo:\n%s\nwant (the ignored log keeps its new line):\n%s", got, wantBefore)
	}
	if _, err := c.TurnRedo(testCtx(t), protocol.TurnRedoParams{OperationID: u.OperationID}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); got != after {
		t.Errorf("after redo:\n%s\nwant:\n%s", got, after)
	}
}

// What the person changed after the turn survives its undo: an edit
// elsewhere in a file merges; an edit where the turn changed leaves that
// file exactly as it is, reported with its hunks. all_or_nothing refuses
// then, and a dry run writes nothing.
func TestTurnUndoKeepsLaterEdits(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ws := d.Root
	text := func(top, bottom string) string {
		var b strings.Builder
		b.WriteString(top + "\n")
		for i := range 12 {
			fmt.Fprintf(&b, "middle %d\n", i)
		}
		b.WriteString(bottom + "\n")
		return b.String()
	}
	writeFiles(t, ws, map[string]string{"merge.txt": text("top", "bottom"), "clash.txt": text("top", "bottom")})
	b := beginTurn(t, c, ws)
	sh(t, ws, `sed -i 's/^top$/agent top/' merge.txt clash.txt`)
	if _, err := c.TurnEnd(testCtx(t), b.TurnID); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{"merge.txt": text("agent top", "person bottom"), "clash.txt": text("person top", "bottom")})
	now := tree(t, ws)

	dry, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID, DryRun: true})
	if err != nil || !dry.DryRun || len(dry.Files) != 2 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	refused, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID, AllOrNothing: true})
	if err != nil || !refused.Refused {
		t.Fatalf("all_or_nothing: %+v, %v; want refused", refused, err)
	}
	if got := tree(t, ws); got != now {
		t.Fatalf("a dry run or a refused undo wrote:\n%s", got)
	}
	u, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]protocol.UndoFileResult{}
	for _, f := range u.Files {
		out[f.Path] = f
	}
	if out["merge.txt"].Outcome != protocol.UndoMerged {
		t.Errorf("merge.txt: %+v, want merged", out["merge.txt"])
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "merge.txt")); string(got) != text("top", "person bottom") {
		t.Errorf("merge.txt:\n%s", got)
	}
	if o := out["clash.txt"]; o.Outcome != protocol.UndoLeft || len(o.Hunks) != 1 || o.Hunks[0].Ours != "person top\n" {
		t.Errorf("clash.txt: %+v, want left with the overlapping hunk", o)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "clash.txt")); string(got) != text("person top", "bottom") {
		t.Errorf("clash.txt was touched:\n%s", got)
	}
}

// A turn open while the daemon restarts records what changed before,
// during and after the restart, and its undo is exact.
func TestTurnSpansDaemonRestart(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ws := d.Root
	writeFiles(t, ws, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	before := tree(t, ws)
	b := beginTurn(t, c, ws)
	writeFiles(t, ws, map[string]string{"a.txt": "a before the restart\n"})
	d.Stop()
	writeFiles(t, ws, map[string]string{"down.txt": "written while the daemon was down\n"})
	sh(t, ws, "rm b.txt")
	d.Restart()
	c = dial(t, d)
	writeFiles(t, ws, map[string]string{"after.txt": "after\n"})
	ti, err := c.TurnEnd(testCtx(t), b.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ti.Files) != 4 {
		t.Errorf("turn files %+v, want a.txt, after.txt, b.txt, down.txt", ti.Files)
	}
	if _, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); got != before {
		t.Errorf("after undo:\n%s\nwant:\n%s", got, before)
	}
}

// More changed directories than the watcher keeps (its queue overflows)
// are caught by a full scan, and daemon.status says so.
func TestTurnWatchOverflowCaughtByScan(t *testing.T) {
	d := testdaemon.StartEnv(t, []string{checkpoint.EnvMaxDirty + "=3"})
	c := dial(t, d)
	ws := d.Root
	for i := range 10 {
		writeFiles(t, ws, map[string]string{fmt.Sprintf("d%d/f.txt", i): "old\n"})
	}
	b := beginTurn(t, c, ws)
	for i := range 10 {
		writeFiles(t, ws, map[string]string{fmt.Sprintf("d%d/f.txt", i): "new\n"})
	}
	ti, err := c.TurnEnd(testCtx(t), b.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ti.Files) != 10 {
		t.Errorf("%d files recorded, want 10: %+v", len(ti.Files), ti.Files)
	}
	st, err := c.Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints == nil || len(st.Checkpoints.Workspaces) != 1 || st.Checkpoints.Workspaces[0].Reason != "overflow" {
		t.Errorf("daemon.status checkpoints: %+v, want the overflow said", st.Checkpoints)
	}
}

// An undo killed between two files is finished at the next start: every
// file is put back, none half.
func TestTurnUndoKilledMidwayIsFinished(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	ws := d.Root
	files := map[string]string{}
	for i := range 6 {
		files[fmt.Sprintf("f%d.txt", i)] = fmt.Sprintf("original %d\n", i)
	}
	writeFiles(t, ws, files)
	before := tree(t, ws)
	b := beginTurn(t, c, ws)
	sh(t, ws, `for f in f*.txt; do echo changed >> $f; done; rm f5.txt`)
	if _, err := c.TurnEnd(testCtx(t), b.TurnID); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=" + checkpoint.FailpointUndoFile + "=3"}
	d.Restart()
	c = dial(t, d)
	if _, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID}); err == nil {
		t.Fatal("the undo returned although the daemon was killed in it")
	}
	d.Wait()
	if got := tree(t, ws); got == before {
		t.Fatal("the kill came after every file: nothing to finish")
	}
	d.Env = nil
	d.Restart()
	c = dial(t, d)
	if got := tree(t, ws); got != before {
		t.Errorf("after the restart:\n%s\nwant:\n%s", got, before)
	}
	ti, err := c.TurnGet(testCtx(t), protocol.TurnGetParams{TurnID: b.TurnID})
	if err != nil || ti.State != protocol.TurnUndone {
		t.Errorf("turn after the restart: %s, %v; want undone", ti.State, err)
	}
	if _, err := c.TurnRedo(testCtx(t), protocol.TurnRedoParams{Last: true, WorkspaceRoot: ws}); err != nil {
		t.Errorf("redo of the finished undo: %v", err)
	}
}

// A turn's end checkpoint killed before it is recorded loses nothing: the
// turn is still open after the restart, and ending it then records every
// change, which an undo puts back.
func TestTurnEndKilledBeforeItsCheckpointIsRecorded(t *testing.T) {
	d := testdaemon.Start(t)
	ws := d.Root
	writeFiles(t, ws, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	before := tree(t, ws)
	d.Stop()
	// The first pass is the turn's start checkpoint, the second its end.
	d.Env = []string{failpoint.EnvVar + "=" + checkpoint.FailpointCheckpointCommit + "=2"}
	d.Restart()
	c := dial(t, d)
	b := beginTurn(t, c, ws)
	sh(t, ws, "echo changed >> a.txt && rm b.txt && echo new > c.txt")
	if _, err := c.TurnEnd(testCtx(t), b.TurnID); err == nil {
		t.Fatal("turn.end returned although the daemon was killed in it")
	}
	d.Wait()
	d.Env = nil
	d.Restart()
	c = dial(t, d)
	ti, err := c.TurnEnd(testCtx(t), b.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ti.Files) != 3 {
		t.Errorf("turn files after the restart: %+v, want a.txt, b.txt, c.txt", ti.Files)
	}
	if _, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); got != before {
		t.Errorf("after undo:\n%s\nwant:\n%s", got, before)
	}
}

// A root allowed while the daemon runs holds workspaces whose turns are
// recorded and undone like any other.
func TestTurnInARootAllowedWhileRunning(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	extra, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, extra, map[string]string{"a.txt": "a\n"})
	if _, err := c.TurnBegin(testCtx(t), protocol.TurnBeginParams{WorkspaceRoot: extra}); err == nil {
		t.Fatal("turn.begin outside the allowed roots succeeded")
	}
	if _, err := c.AllowRoot(testCtx(t), extra); err != nil {
		t.Fatal(err)
	}
	b := beginTurn(t, c, extra)
	writeFiles(t, extra, map[string]string{"a.txt": "changed\n"})
	if _, err := c.TurnEnd(testCtx(t), b.TurnID); err != nil {
		t.Fatal(err)
	}
	u, err := c.TurnUndo(testCtx(t), protocol.TurnUndoParams{TurnID: b.TurnID})
	if err != nil || len(u.Files) != 1 || u.Files[0].Outcome != protocol.UndoReverted {
		t.Fatalf("undo: %+v, %v", u, err)
	}
	if got, _ := os.ReadFile(filepath.Join(extra, "a.txt")); string(got) != "a\n" {
		t.Errorf("a.txt after undo: %q", got)
	}
}
