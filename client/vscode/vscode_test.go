// Package vscode_test builds the VS Code extension and tests it: its unit
// tests (node --test), and end to end in a real VS Code (code-server from
// npm) driven by a headless Chromium, against the real oriond.
package vscode_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func TestMain(m *testing.M) { testdaemon.Main(m) }

var (
	buildOnce sync.Once
	vsix      string
	buildErr  string
	buildSkip bool
)

// buildExtension runs npm ci (the committed lockfile, pinned versions),
// the unit tests and the packaging of the .vsix, once per test binary.
func buildExtension(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if _, err := exec.LookPath("npm"); err != nil {
			buildErr, buildSkip = "npm is not installed; the extension needs Node 20+ and npm", true
			return
		}
		dir, _ := os.Getwd()
		npm := func(args ...string) (string, error) {
			cmd := exec.Command("npm", args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		start := time.Now()
		if out, err := npm("ci", "--no-audit", "--no-fund", "--prefer-offline"); err != nil {
			buildErr, buildSkip = "npm ci failed (registry unreachable?): "+err.Error()+"\n"+string(tail([]byte(out), 3000)), true
			return
		}
		t.Logf("npm ci: %s", time.Since(start).Round(100*time.Millisecond))
		if out, err := npm("test"); err != nil {
			buildErr = "the extension's unit tests failed:\n" + out
			return
		} else {
			t.Logf("npm test:\n%s", tail([]byte(out), 1500))
		}
		start = time.Now()
		if out, err := npm("run", "package"); err != nil {
			buildErr = "packaging the .vsix failed:\n" + out
			return
		}
		t.Logf("npm run package: %s", time.Since(start).Round(100*time.Millisecond))
		vsix = filepath.Join(dir, "orion.vsix")
	})
	if buildSkip {
		skipf(t, "%s", buildErr)
	}
	if buildErr != "" {
		t.Fatal(buildErr)
	}
	return vsix
}

// TestExtensionUnits runs the extension's own tests (its tree model,
// status bar and message texts) and builds the .vsix.
func TestExtensionUnits(t *testing.T) {
	if testing.Short() {
		t.Skip("the extension's npm build is skipped in -short mode")
	}
	p := buildExtension(t)
	if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
		t.Fatalf("no .vsix at %s: %v", p, err)
	}
}

// TestExtensionInCodeServer installs the .vsix in a real VS Code
// (code-server), opens a workspace in a headless Chromium and checks,
// through the browser, what a person sees while an agent writes a file.
func TestExtensionInCodeServer(t *testing.T) {
	if testing.Short() {
		t.Skip("the end-to-end test is skipped in -short mode")
	}
	began := time.Now()
	installAll(t)
	if os.Getenv("ORION_VSCODE_INSTALL_ONLY") == "1" {
		// .ci/run fills the caches before the test run, under a timeout of
		// its own: a first code-server install on a loaded machine can
		// take most of go test's 10 minutes per package.
		return
	}

	d := testdaemon.Start(t)
	ws := filepath.Join(d.Root, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(ws, "notes.txt")
	const old = "the first version\nwritten by a person\n"
	if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}

	// The workspace's own settings try to name the programs the extension
	// runs and the socket it trusts: a cloned repository can carry them.
	// They are ignored: the extension connects to the person's socket and
	// runs the person's orionctl (a recorder here).
	repo := hostileWorkspaceSettings(t, ws)
	wb := startWorkbench(t, d, ws, true)
	w := wb.drive(t, d, "", target)
	await, send := w.await, w.send
	ctx := w.ctx

	start := time.Now()
	await("ready")
	t.Logf("workbench loaded with the extension connected: %s", time.Since(start).Round(100*time.Millisecond))

	// The agent's client streams the new version: begun and half sent.
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bg, err := c.Begin(ctx, protocol.BeginParams{Intent: "rewrite the notes", TargetFile: "notes.txt", Operation: protocol.OpOverwrite, WorkspaceRoot: ws})
	if err != nil {
		t.Fatal(err)
	}
	newContent := "the second version\nwritten by an agent\nthrough oriond\n"
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: bg.SessionID, Seq: 1, Chunk: "the second version\nwritten by an agent\n"}); err != nil {
		t.Fatal(err)
	}
	send("streaming")
	await("seen-streaming")

	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: bg.SessionID, Seq: 2, Chunk: "through oriond\n" + bg.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: bg.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != newContent {
		t.Fatalf("after finalize the file holds %q", got)
	}
	send("finalized")
	await("diff")
	await("undone")
	if got, _ := os.ReadFile(target); string(got) != old {
		t.Fatalf("after Orion: Undo Last Write the file holds %q, want the person's version %q", got, old)
	}

	// A write the daemon refuses: git's config is protected.
	if _, err := c.Begin(ctx, protocol.BeginParams{TargetFile: ".git/config", Operation: protocol.OpOverwrite, WorkspaceRoot: ws}); err == nil {
		t.Fatal("a write to .git/config was not refused")
	}
	send("refused")
	await("refused-seen")

	// The person has unsaved changes in the file when the agent writes it.
	await("dirty")
	if _, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "notes.txt", Operation: protocol.OpOverwrite, WorkspaceRoot: ws}, Content: "the third version\n"}); err != nil {
		t.Fatal(err)
	}
	send("written-dirty")
	await("compared")

	// The daemon stops and comes back.
	d.Kill()
	send("killed")
	await("down")
	d.Restart()
	send("restarted")
	await("up")
	await("trace")

	// The person changes a file while an agent streams it.
	other := filepath.Join(ws, "plan.md")
	if err := os.WriteFile(other, []byte("# the person's plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The daemon restarted since c dialled it.
	c2, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	cb, err := c2.Begin(ctx, protocol.BeginParams{TargetFile: "plan.md", Operation: protocol.OpOverwrite, WorkspaceRoot: ws})
	if err != nil {
		t.Fatal(err)
	}
	const agentPlan = "# the agent's plan\n"
	if _, err := c2.Append(ctx, protocol.AppendParams{SessionID: cb.SessionID, Seq: 1, Chunk: agentPlan + cb.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("# the person's plan, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	send("conflict")
	await("forced")
	if got, _ := os.ReadFile(other); string(got) != agentPlan {
		t.Fatalf("after Finalize Anyway plan.md holds %q, want the agent's %q", got, agentPlan)
	}

	// An agent's turn whose files a shell wrote, then Orion: Undo Last Turn.
	tb, err := c2.TurnBegin(ctx, protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: "test-agent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("# the plan, as the turn left it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "turn.txt"), []byte("made in the turn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.TurnEnd(ctx, tb.TurnID); err != nil {
		t.Fatal(err)
	}
	send("turn")
	await("turn-undone")
	if got, _ := os.ReadFile(other); string(got) != agentPlan {
		t.Fatalf("after Orion: Undo Last Turn plan.md holds %q, want %q as before the turn", got, agentPlan)
	}
	if _, err := os.Stat(filepath.Join(ws, "turn.txt")); err == nil {
		t.Fatal("after Orion: Undo Last Turn turn.txt, which the turn created, is still there")
	}
	w.wait(t)
	t.Logf("browser steps: %s", time.Since(start).Round(100*time.Millisecond))
	t.Logf("whole test: %s", time.Since(began).Round(100*time.Millisecond))
	repo.check(t, wb, d.Socket, true)
}

// TestExtensionInRestrictedMode opens a workspace in Restricted Mode, VS
// Code's default for a folder not yet trusted, whose settings name
// programs of its own: the extension still shows what an agent wrote (the
// status bar, the sessions view, the diff, the trace) and runs nothing,
// neither the workspace's programs nor the person's.
func TestExtensionInRestrictedMode(t *testing.T) {
	if testing.Short() {
		t.Skip("the end-to-end test is skipped in -short mode")
	}
	installAll(t)
	if os.Getenv("ORION_VSCODE_INSTALL_ONLY") == "1" {
		return
	}
	d := testdaemon.Start(t)
	ws := filepath.Join(d.Root, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(target, []byte("the first version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := hostileWorkspaceSettings(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(ctx, protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "rewrite the notes", TargetFile: "notes.txt",
		Operation: protocol.OpOverwrite, WorkspaceRoot: ws}, Content: "the second version\n"}); err != nil {
		t.Fatal(err)
	}
	wb := startWorkbench(t, d, ws, false)
	w := wb.drive(t, d, "restricted", target)
	w.await("shown")
	d.Kill()
	w.send("killed")
	w.await("down")
	w.wait(t)
	repo.check(t, wb, d.Socket, false)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func waitHTTP(t *testing.T, url string, log *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := http.Get(url); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("code-server did not answer %s within 60s:\n%s", url, log.String())
}

// saveFailure keeps the failure screenshot where a person finds it.
func saveFailure(t *testing.T, shots string) {
	src := filepath.Join(shots, "failure.png")
	dst := filepath.Join(os.TempDir(), "orion-vscode-e2e-failure.png")
	if b, err := os.ReadFile(src); err == nil && os.WriteFile(dst, b, 0o644) == nil {
		t.Logf("the browser's screen at the failure: %s", dst)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
