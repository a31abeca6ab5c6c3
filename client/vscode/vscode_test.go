// Package vscode_test builds the VS Code extension and tests it: its unit
// tests (node --test), and end to end in a real VS Code (code-server from
// npm) driven by a headless Chromium, against the real oriond.
package vscode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	pkg := buildExtension(t)
	nodeBin, _ := installNode(t)
	codeServer := installCodeServer(t)
	mods := installDriver(t)
	t.Logf("build and installs: %s", time.Since(began).Round(100*time.Millisecond))
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

	// code-server with a home, settings and extensions of its own.
	home := t.TempDir()
	userData := filepath.Join(home, "data")
	exts := filepath.Join(home, "extensions")
	settings := map[string]any{
		"orion.socket":                                 d.Socket,
		"security.workspace.trust.enabled":             false,
		"workbench.startupEditor":                      "none",
		"workbench.tips.enabled":                       false,
		"telemetry.telemetryLevel":                     "off",
		"extensions.autoCheckUpdates":                  false,
		"extensions.autoUpdate":                        false,
		"update.mode":                                  "none",
		"chat.disableAIFeatures":                       true,
		"workbench.secondarySideBar.defaultVisibility": "hidden",
		"window.commandCenter":                         false,
		// The person's edit must stay unsaved.
		"files.autoSave": "off",
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.MkdirAll(filepath.Join(userData, "User"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(userData, "User", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"PATH="+nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "ORION_SOCKET="+d.Socket)
	codeCmd := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(nodeBin, "node"), append([]string{codeServer,
			"--user-data-dir", userData, "--extensions-dir", exts}, args...)...)
		cmd.Env = env
		return cmd
	}
	start := time.Now()
	if out, err := codeCmd(context.Background(), "--install-extension", pkg).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "successfully installed") {
		t.Fatalf("code-server --install-extension %s: %v\n%s", pkg, err, out)
	}
	t.Logf("code-server --install-extension: %s", time.Since(start).Round(100*time.Millisecond))

	port := freePort(t)
	srv := codeCmd(context.Background(), "--auth", "none", "--bind-addr", "127.0.0.1:"+port,
		"--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", ws)
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var srvLog lockedBuffer
	srv.Stdout, srv.Stderr = &srvLog, &srvLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// code-server runs its extension host and file watcher as children.
		syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		srv.Wait()
	})
	base := "http://127.0.0.1:" + port
	waitHTTP(t, base+"/healthz", &srvLog)

	shots := t.TempDir()
	var screenshot string
	if os.Getenv("ORION_UPDATE_SCREENSHOTS") == "1" {
		screenshot, _ = filepath.Abs(filepath.Join("..", "..", "docs", "images", "vscode.png"))
		os.MkdirAll(filepath.Dir(screenshot), 0o755)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	drv := exec.CommandContext(ctx, filepath.Join(nodeBin, "node"), "e2e/drive.mjs")
	drv.Env = append(os.Environ(), "ORION_E2E_MODULES="+mods, "ORION_E2E_URL="+base+"/?folder="+ws,
		"ORION_E2E_SHOTS="+shots, "ORION_E2E_TARGET="+target, "ORION_E2E_SCREENSHOT="+screenshot)
	stdin, _ := drv.StdinPipe()
	stdout, _ := drv.StdoutPipe()
	var drvErr lockedBuffer
	drv.Stderr = &drvErr
	// The driver and its Chromium in a process group of their own, ended
	// together when the test ends, failed or not (a driver waiting for the
	// test's next line would otherwise wait for the timeout).
	drv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := drv.Start(); err != nil {
		t.Fatal(err)
	}
	var chromePID atomic.Int64
	defer func() {
		syscall.Kill(-drv.Process.Pid, syscall.SIGKILL)
		if pid := chromePID.Load(); pid > 0 {
			syscall.Kill(-int(pid), syscall.SIGKILL)
		}
		drv.Wait()
	}()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// await reads the driver's lines until "step name", logging the rest.
	await := func(name string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the driver ended before %q\nstderr: %s\ncode-server: %s\nscreenshots in %s", name, drvErr.String(), tail([]byte(srvLog.String()), 3000), shots)
				}
				t.Logf("driver: %s", l)
				if pid, ok := strings.CutPrefix(l, "chromium-pid "); ok {
					n, _ := strconv.ParseInt(pid, 10, 64)
					chromePID.Store(n)
				}
				if strings.HasPrefix(l, "fail ") {
					saveFailure(t, shots)
					t.Fatalf("in the browser: %s\ndaemon: %s", strings.TrimPrefix(l, "fail "), tail([]byte(d.Logs()), 2000))
				}
				if l == "step "+name {
					return
				}
			case <-ctx.Done():
				t.Fatalf("timed out waiting for the driver's %q", name)
			}
		}
	}
	send := func(name string) { io.WriteString(stdin, "go "+name+"\n") }

	start = time.Now()
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
	// The driver closes the browser and exits.
	for drained := false; !drained; {
		select {
		case _, ok := <-lines:
			drained = !ok
		case <-time.After(30 * time.Second):
			t.Log("the driver did not exit within 30s of its last step; ending it")
			drained = true
		}
	}
	t.Logf("browser steps: %s", time.Since(start).Round(100*time.Millisecond))
	t.Logf("whole test: %s", time.Since(began).Round(100*time.Millisecond))
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
