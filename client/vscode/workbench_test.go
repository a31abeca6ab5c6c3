package vscode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testcache"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// installs are what the end-to-end tests need: the .vsix, Node, code-server
// and the browser driver's modules.
type installs struct{ vsix, nodeBin, codeServer, mods string }

// installAll builds the extension and installs the rest (each once per
// test process, kept in the caches of install_test.go).
func installAll(t *testing.T) installs {
	t.Helper()
	began := time.Now()
	var in installs
	in.vsix = buildExtension(t)
	in.nodeBin, _ = installNode(t)
	in.codeServer = installCodeServer(t)
	in.mods = installDriver(t)
	t.Logf("build and installs: %s", time.Since(began).Round(100*time.Millisecond))
	return in
}

// workbench is a code-server serving one workspace, with a home, settings
// and extensions of its own.
type workbench struct {
	installs
	base string
	// orionctl is the orionctl of the user settings, and calls where it
	// and the settings' oriond (recorders, not the real programs) write
	// each command line they were run with.
	orionctl, calls string
	// tmp is the TMPDIR and XDG_RUNTIME_DIR of code-server and the
	// driver's Chromium, which put sockets there (vscode-*.sock,
	// org.chromium.Chromium.*): short, so the socket paths fit in any
	// TMPDIR, and removed when the test ends.
	tmp string
}

// startWorkbench installs the .vsix in a fresh code-server and serves ws.
// Trusted, workspace trust is off (every folder is trusted); otherwise
// trust is on, as VS Code ships, and ws opens in Restricted Mode.
func startWorkbench(t *testing.T, d *testdaemon.Daemon, ws string, trusted bool) *workbench {
	t.Helper()
	wb := &workbench{installs: installAll(t)}
	home := t.TempDir()
	tmp, err := os.MkdirTemp("/tmp", "orion-code-server-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered before code-server's end, so it runs after it.
	t.Cleanup(func() { os.RemoveAll(tmp) })
	wb.tmp = tmp
	userData := filepath.Join(home, "data")
	exts := filepath.Join(home, "extensions")
	// orionctl and oriond as the person set them in the user settings:
	// recorders of how the extension runs them. (Not found on PATH: the
	// extension host takes PATH from a login shell, which resets it.)
	bin := filepath.Join(home, "bin")
	wb.calls = filepath.Join(home, "calls")
	wb.orionctl = filepath.Join(bin, "orionctl")
	writeScript(t, wb.orionctl, wb.calls)
	writeScript(t, filepath.Join(bin, "oriond"), wb.calls)
	// code-server is a remote window: its machine settings (these three)
	// are the server's Machine settings, not the User ones.
	machine := map[string]any{
		"orion.socket":       d.Socket,
		"orion.orionctlPath": wb.orionctl,
		"orion.oriondPath":   filepath.Join(bin, "oriond"),
	}
	settings := map[string]any{
		"security.workspace.trust.enabled":             !trusted,
		"security.workspace.trust.startupPrompt":       "never",
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
	for dir, s := range map[string]map[string]any{"User": settings, "Machine": machine} {
		b, _ := json.MarshalIndent(s, "", "  ")
		if err := os.MkdirAll(filepath.Join(userData, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(userData, dir, "settings.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "TMPDIR="+tmp, "XDG_RUNTIME_DIR="+tmp, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		// No ORION_SOCKET: the extension finds the daemon by its setting.
		"PATH="+wb.nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "ORION_SOCKET=")
	codeCmd := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(wb.nodeBin, "node"), append([]string{wb.codeServer,
			"--user-data-dir", userData, "--extensions-dir", exts}, args...)...)
		cmd.Env = env
		return cmd
	}
	start := time.Now()
	if out, err := codeCmd(context.Background(), "--install-extension", wb.vsix).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "successfully installed") {
		t.Fatalf("code-server --install-extension %s: %v\n%s", wb.vsix, err, out)
	}
	t.Logf("code-server --install-extension: %s", time.Since(start).Round(100*time.Millisecond))

	port := freePort(t)
	args := []string{"--auth", "none", "--bind-addr", "127.0.0.1:" + port, "--disable-telemetry", "--disable-update-check"}
	if trusted {
		args = append(args, "--disable-workspace-trust")
	}
	srv := codeCmd(context.Background(), append(args, ws)...)
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
	wb.base = "http://127.0.0.1:" + port
	waitHTTP(t, wb.base+"/healthz", &srvLog)
	return wb
}

// writeScript writes an executable that appends its command line to log.
func writeScript(t *testing.T, path, log string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf '%s\\n' \"$0 $*\" >> '" + log + "'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// driver is e2e/drive.mjs with its Chromium, running one flow.
type driver struct {
	ctx   context.Context
	lines chan string
	await func(name string)
	send  func(name string)
}

// drive starts the browser driver on the workbench with flow ("" for the
// main one, "restricted") and target, the file it watches. It and its
// Chromium are ended when the test ends.
// chromiumDir is where @sparticuz/chromium unpacks its browser.
func chromiumDir(t *testing.T) string {
	dir := testcache.Path("vscode-driver-chromium-" + chromiumVersion)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (wb *workbench) drive(t *testing.T, d *testdaemon.Daemon, flow, target string) *driver {
	t.Helper()
	shots := t.TempDir()
	var screenshot string
	if os.Getenv("ORION_UPDATE_SCREENSHOTS") == "1" && flow == "" {
		screenshot, _ = filepath.Abs(filepath.Join("..", "..", "docs", "images", "vscode.png"))
		os.MkdirAll(filepath.Dir(screenshot), 0o755)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	drv := exec.CommandContext(ctx, filepath.Join(wb.nodeBin, "node"), "e2e/drive.mjs")
	drv.Env = append(os.Environ(), "ORION_E2E_MODULES="+wb.mods, "ORION_E2E_URL="+wb.base+"/?folder="+filepath.Dir(target),
		"ORION_E2E_SHOTS="+shots, "ORION_E2E_TARGET="+target, "ORION_E2E_SCREENSHOT="+screenshot, "ORION_E2E_FLOW="+flow,
		"ORION_E2E_ORIONCTL="+wb.orionctl, "TMPDIR="+wb.tmp, "XDG_RUNTIME_DIR="+wb.tmp,
		// @sparticuz/chromium unpacks its browser (210 MB) into the temp dir
		// on first use: this one keeps it in the cache for later runs.
		"ORION_E2E_CHROMIUM_TMPDIR="+chromiumDir(t))
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
	t.Cleanup(func() {
		syscall.Kill(-drv.Process.Pid, syscall.SIGKILL)
		if pid := chromePID.Load(); pid > 0 {
			syscall.Kill(-int(pid), syscall.SIGKILL)
		}
		drv.Wait()
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	w := &driver{ctx: ctx, lines: lines}
	// await reads the driver's lines until "step name", logging the rest.
	w.await = func(name string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the driver ended before %q\nstderr: %s\nscreenshots in %s", name, drvErr.String(), shots)
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
	w.send = func(name string) { io.WriteString(stdin, "go "+name+"\n") }
	return w
}

// wait lets the driver close the browser and exit.
func (w *driver) wait(t *testing.T) {
	for {
		select {
		case _, ok := <-w.lines:
			if !ok {
				return
			}
		case <-time.After(30 * time.Second):
			t.Log("the driver did not exit within 30s of its last step; ending it")
			return
		}
	}
}

// hostile is a workspace whose .vscode/settings.json names programs of the
// repository for the extension to run and a socket of its own.
type hostile struct{ ran, socket string }

func hostileWorkspaceSettings(t *testing.T, ws string) *hostile {
	t.Helper()
	h := &hostile{ran: filepath.Join(ws, "tools", "ran"), socket: filepath.Join(ws, "repo.sock")}
	evil := filepath.Join(ws, "tools", "evil")
	writeScript(t, evil, h.ran)
	b, _ := json.Marshal(map[string]string{"orion.orionctlPath": evil, "orion.oriondPath": evil, "orion.socket": h.socket})
	if err := os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// check fails the test if the repository's program ran, and reads what
// the person's programs were run with: trusted, orionctl with the person's
// socket; in Restricted Mode, nothing at all.
func (h *hostile) check(t *testing.T, wb *workbench, socket string, trusted bool) {
	t.Helper()
	if b, err := os.ReadFile(h.ran); err == nil {
		t.Errorf("the extension ran the program the workspace's settings name: %s", b)
	}
	calls, err := os.ReadFile(wb.calls)
	switch {
	case trusted && err != nil:
		t.Errorf("the extension never ran the person's orionctl: %v", err)
	case trusted && !strings.Contains(string(calls), "orionctl --socket "+socket+" "):
		t.Errorf("orionctl was not run with the person's socket %s:\n%s", socket, calls)
	case trusted && strings.Contains(string(calls), h.socket):
		t.Errorf("a program was run with the workspace's socket:\n%s", calls)
	case !trusted && err == nil:
		t.Errorf("in Restricted Mode the extension ran:\n%s", calls)
	}
	t.Logf("programs the extension ran:\n%s", calls)
}
