package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// txWrite writes a.txt and b.txt of d.Root in one transaction, over their
// old contents, and returns its id.
func txWrite(t *testing.T, d *testdaemon.Daemon, a, b string) string {
	t.Helper()
	src := t.TempDir()
	for name, content := range map[string]string{"a": a, "b": b} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := orionctl(t, d.Socket, "", "tx", "write", "--json",
		filepath.Join(d.Root, "a.txt")+"="+filepath.Join(src, "a"), filepath.Join(d.Root, "b.txt")+"="+filepath.Join(src, "b"))
	var res protocol.TxCommitResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("tx write: exit %d: %s%s", code, out, errOut)
	}
	return res.TxID
}

func readRoot(t *testing.T, d *testdaemon.Daemon, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUndoTransaction: undo TX and undo --last put back every file of a
// transaction, and sessions list and show say "undone".
func TestUndoTransaction(t *testing.T) {
	d := testdaemon.Start(t)
	t.Chdir(d.Root) // undo --last looks in the current directory's workspace
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(d.Root, name), []byte("old "+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tx := txWrite(t, d, "first a\n", "first b\n")
	code, out, errOut := orionctl(t, d.Socket, "", "undo", shortID(tx))
	if code != 0 {
		t.Fatalf("undo TX: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "undid transaction "+tx+": 2 files") || strings.Count(out, "  restored ") != 2 {
		t.Errorf("undo TX printed:\n%s", out)
	}
	if a, b := readRoot(t, d, "a.txt"), readRoot(t, d, "b.txt"); a != "old a.txt\n" || b != "old b.txt\n" {
		t.Fatalf("after undo TX: a.txt %q, b.txt %q", a, b)
	}

	// --last: the last write was a transaction, so all of it.
	txWrite(t, d, "second a\n", "second b\n")
	if code, out, errOut := orionctl(t, d.Socket, "", "undo", "--last"); code != 0 || !strings.Contains(out, "2 files") {
		t.Fatalf("undo --last: exit %d: %s%s", code, out, errOut)
	}
	if a, b := readRoot(t, d, "a.txt"), readRoot(t, d, "b.txt"); a != "old a.txt\n" || b != "old b.txt\n" {
		t.Fatalf("after undo --last: a.txt %q, b.txt %q", a, b)
	}
	code, out, _ = orionctl(t, d.Socket, "", "undo", "--last")
	if code == 0 {
		t.Fatalf("a third undo --last found something to undo:\n%s", out)
	}

	code, out, _ = orionctl(t, d.Socket, "", "sessions", "list", "--all")
	if code != 0 || strings.Count(out, " undone ") != 4 || strings.Contains(out, "completed") {
		t.Errorf("sessions list --all: exit %d, want 4 sessions undone:\n%s", code, out)
	}
	var list protocol.ListResult
	if code, js, _ := orionctl(t, d.Socket, "", "sessions", "list", "--all", "--json"); code != 0 || json.Unmarshal([]byte(js), &list) != nil || len(list.Sessions) == 0 {
		t.Fatalf("sessions list --json: %s", js)
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "show", list.Sessions[0].SessionID)
	if code != 0 || showField(out, "stage:") != "undone" || showField(out, "transaction:") == "" {
		t.Errorf("sessions show:\n%s", out)
	}
}

// TestDryRunShowsAsDryRun: the session of write --dry-run shows "dry run"
// in sessions list and show, not aborted.
func TestDryRunShowsAsDryRun(t *testing.T) {
	d := testdaemon.Start(t)
	target := filepath.Join(d.Root, "dry.txt")
	code, out, errOut := orionctl(t, d.Socket, "checked\n", "write", "--dry-run", target, "--json")
	var res protocol.FinalizeResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("write --dry-run: exit %d: %s%s", code, out, errOut)
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "list", "--all")
	if code != 0 || !strings.Contains(out, " dry run ") || strings.Contains(out, "aborted") {
		t.Errorf("sessions list --all:\n%s", out)
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "show", res.SessionID)
	if code != 0 || showField(out, "stage:") != "dry run" {
		t.Errorf("sessions show:\n%s", out)
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "show", res.SessionID, "--json")
	var info protocol.SessionInfo
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.Stage != protocol.StageAborted || !info.DryRun {
		t.Errorf("sessions show --json: stage %s, dry_run %v:\n%s", info.Stage, info.DryRun, out)
	}
}

// showField is the value of a "name: value" line of sessions show.
func showField(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// undo --last in one project undoes that project's newest write, never
// the newer one of another project, and names the file before it acts;
// --any undoes the newest anywhere.
func TestUndoLastStaysInItsProject(t *testing.T) {
	d := testdaemon.Start(t)
	for _, p := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(d.Root, p, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(d.Root, p, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) {
		t.Helper()
		if code, _, errOut := orionctl(t, d.Socket, content, "write", "--op", "overwrite", filepath.Join(d.Root, name)); code != 0 {
			t.Fatalf("write %s: exit %d: %s", name, code, errOut)
		}
	}
	write("a/notes.md", "a1\n")
	write("b/notes.md", "b1\n") // the newest write of all

	t.Chdir(filepath.Join(d.Root, "a", "src"))
	code, out, errOut := orionctl(t, d.Socket, "", "undo", "--last")
	if code != 0 {
		t.Fatalf("undo --last in project a: exit %d: %s%s", code, out, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(first, "undoing ") || !strings.Contains(first, filepath.Join("a", "notes.md")) {
		t.Errorf("undo --last did not name a/notes.md before acting; it printed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "a", "notes.md")); err == nil {
		t.Error("a/notes.md, which the undone write created, is still there")
	}
	if b := readRoot(t, d, "b/notes.md"); b != "b1\n" {
		t.Fatalf("undo --last in project a changed b/notes.md: %q", b)
	}
	if code, _, errOut := orionctl(t, d.Socket, "", "undo", "--last"); code != exitFailure || !strings.Contains(errOut, "no write to undo in "+filepath.Join(d.Root, "a")) {
		t.Errorf("a second undo --last in project a: exit %d, %q; want nothing to undo there", code, errOut)
	}
	if b := readRoot(t, d, "b/notes.md"); b != "b1\n" {
		t.Fatalf("a second undo --last in project a changed b/notes.md: %q", b)
	}
	if code, out, errOut := orionctl(t, d.Socket, "", "undo", "--last", "--any"); code != 0 || !strings.Contains(out, filepath.Join("b", "notes.md")) {
		t.Fatalf("undo --last --any: exit %d: %s%s; want b/notes.md undone", code, out, errOut)
	}
}

// oriond's log has a line for a refused begin, with its reason and the
// resolved path but not the client's intent, and one for a session undone.
func TestDaemonLogsRefusedBeginAndUndo(t *testing.T) {
	d := testdaemon.Start(t)
	if err := os.MkdirAll(filepath.Join(d.Root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	const intent = "INTENT-NOT-FOR-THE-LOG"
	if code, _, _ := orionctl(t, d.Socket, "x\n", "write", "--chunk-size", "100", "--intent", intent,
		filepath.Join(d.Root, ".git", "config")); code != exitFailure {
		t.Fatalf("a write to .git/config: exit %d, want 1", code)
	}
	target := filepath.Join(d.Root, "undone.txt")
	code, out, errOut := orionctl(t, d.Socket, "x\n", "write", "--json", target)
	var res protocol.FinalizeResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("write: exit %d: %s", code, errOut)
	}
	if code, _, errOut := orionctl(t, d.Socket, "", "undo", res.SessionID); code != 0 {
		t.Fatalf("undo: exit %d: %s", code, errOut)
	}
	logs := d.WaitLog(`msg="begin refused"`, `msg="session undone"`)
	var begin, undone string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg="begin refused"`) {
			begin = l
		}
		if strings.Contains(l, `msg="session undone"`) {
			undone = l
		}
	}
	if !strings.Contains(begin, "reason=protected_path") || !strings.Contains(begin, "rule=git-name") ||
		!strings.Contains(begin, "path="+filepath.Join(d.Root, ".git", "config")) {
		t.Errorf("no begin refused line with its reason, rule and path; the log:\n%s", logs)
	}
	if !strings.Contains(undone, "session="+res.SessionID) || !strings.Contains(undone, "removed=true") {
		t.Errorf("no session undone line naming the session; the log:\n%s", logs)
	}
	if strings.Contains(logs, intent) {
		t.Errorf("the log carries the client's intent:\n%s", logs)
	}
}

// TestUndoOfACreatedFileChangedSince: undo of a write that created a file
// the person then edited is refused and the file kept; once the person has
// deleted it, undo says it left the path as it is.
func TestUndoOfACreatedFileChangedSince(t *testing.T) {
	d := testdaemon.Start(t)
	t.Chdir(d.Root)
	if code, out, errOut := orionctl(t, d.Socket, "fresh\n", "write", "fresh.txt"); code != 0 {
		t.Fatalf("write: exit %d: %s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(d.Root, "fresh.txt"), []byte("fresh, and the person's line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := orionctl(t, d.Socket, "", "undo", "--last")
	if code == 0 || !strings.Contains(errOut, "target_changed") || readRoot(t, d, "fresh.txt") != "fresh, and the person's line\n" {
		t.Fatalf("undo of an edited created file: exit %d: %s%s", code, out, errOut)
	}
	if err := os.Remove(filepath.Join(d.Root, "fresh.txt")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = orionctl(t, d.Socket, "", "undo", "--last")
	if code != 0 || !strings.Contains(out, "left fresh.txt as it is") {
		t.Fatalf("undo of a deleted created file: exit %d: %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "fresh.txt")); !os.IsNotExist(err) {
		t.Fatalf("the undo made the file again: %v", err)
	}
}
