// Package testdaemon builds the real oriond binary and runs it on a
// temporary socket and state directory, for integration and crash tests
// that talk to it over the socket as clients do.
package testdaemon

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/paths"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

// Race is true when the tests (and so the oriond they run) are built with
// the race detector, which slows the daemon's JSON decoding tenfold or
// more: tests that send huge requests size them down under it.
const Race = raceEnabled

// binPrefix names the directories Binary builds in, in the temp directory;
// the test process's id follows it, so that a later run can tell the
// directory of a run that died (killed, timed out) from one in use.
const binPrefix = "oriond-bin-"

// Binary builds oriond once per test process (with -race when the tests
// run with it, so the daemon's own races are caught too) and returns its
// path. The binary (some 33 MB, 60 with -race) is removed by Main when the
// package's tests end; one left by a test process that did not reach the
// end of Main is removed by the next Binary once that process is gone.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		removeStale(os.TempDir(), time.Now())
		dir, err := os.MkdirTemp("", binPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		binPath = filepath.Join(dir, "oriond")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/orion-agent/orion/daemon/cmd/oriond")
		cmd := exec.Command("go", args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("building oriond: %v\n%s", err, out.String())
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

var (
	orionctlOnce sync.Once
	orionctlPath string
	orionctlErr  error
)

// Orionctl builds the real orionctl once per test process, beside the
// oriond Binary builds (with -race when the tests run with it) and removed
// with it by Main, for tests that drive the daemon as a person or an agent
// does: through the binary, never through the client package.
func Orionctl(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(Binary(t))
	orionctlOnce.Do(func() {
		orionctlPath = filepath.Join(dir, "orionctl")
		args := []string{"build", "-o", orionctlPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/orion-agent/orion/client/cmd/orionctl")...).CombinedOutput()
		if err != nil {
			orionctlErr = fmt.Errorf("building orionctl: %v\n%s", err, out)
		}
	})
	if orionctlErr != nil {
		t.Fatal(orionctlErr)
	}
	return orionctlPath
}

// Main runs a package's tests and then removes the oriond binary they
// built. Every package whose tests call Binary, Start or StartEnv uses it:
//
//	func TestMain(m *testing.M) { testdaemon.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// MainOwnConfig is Main for packages whose tests run binaries that write
// to the user's configuration directory (orionctl proxy makes its secret
// file there): XDG_CONFIG_HOME points at a temporary directory for the
// whole run, removed at its end, so that nothing lands in the real one. A
// test that needs another sets its own in the command's environment.
func MainOwnConfig(m *testing.M) {
	dir, err := os.MkdirTemp("", "orion-test-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the binary Binary built, if any: for a TestMain that
// does more than Main.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// legacyAge is how old a build directory named the way older versions of
// this package named it (oriond-bin and digits, no process id) must be to
// be taken for left over: no test run lasts this long.
const legacyAge = 6 * time.Hour

// removeStale removes the build directories in tmp that this user's
// earlier test processes left: those of a process that no longer runs, and
// old ones named without a process id.
func removeStale(tmp string, now time.Time) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "oriond-bin") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		stale := false
		if rest, ok := strings.CutPrefix(name, binPrefix); ok {
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			stale = err == nil && pid > 0 && !running(pid)
		} else {
			_, err := strconv.ParseUint(strings.TrimPrefix(name, "oriond-bin"), 10, 64)
			stale = err == nil && now.Sub(info.ModTime()) > legacyAge
		}
		if stale {
			os.RemoveAll(filepath.Join(tmp, name))
		}
	}
}

// running reports whether a process with this id exists.
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Daemon is one oriond process under test.
type Daemon struct {
	t *testing.T
	// Socket, StateDir and Root (the allowed root, where tests put targets)
	// are fixed for the Daemon's life, across restarts.
	Socket   string
	StateDir string
	Root     string
	// Args are extra flags for oriond run, and Env extra environment
	// variables (such as armed failpoints), both read at every (re)start.
	Args   []string
	Env    []string
	mu     sync.Mutex
	cmd    *exec.Cmd
	waitCh chan error
	logs   *lockedBuffer
}

// lockedBuffer collects the daemon's output, written by exec's copying
// goroutines while a test may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
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

// Start runs oriond on a fresh socket, state directory and root, and stops
// it when the test ends.
func Start(t *testing.T, extraArgs ...string) *Daemon {
	t.Helper()
	return StartEnv(t, nil, extraArgs...)
}

// StartEnv is Start with extra environment variables from the first start
// on, such as a HOME whose dotfiles the daemon protects.
func StartEnv(t *testing.T, env []string, extraArgs ...string) *Daemon {
	t.Helper()
	// Socket paths are limited to ~104 bytes, and t.TempDir() paths carry
	// the test name, so the socket gets its own short directory.
	sockDir, err := paths.SocketTempDir("orion", "s/oriond.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	return startIn(t, sockDir, env, extraArgs)
}

// StartPublic is Start with the socket's directory in a PublicDir, for
// tests of what a process of another uid meets there.
func StartPublic(t *testing.T, extraArgs ...string) *Daemon {
	t.Helper()
	return startIn(t, PublicDir(t), nil, extraArgs)
}

func startIn(t *testing.T, sockDir string, env, extraArgs []string) *Daemon {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{
		t:        t,
		Socket:   filepath.Join(sockDir, "s", "oriond.sock"),
		StateDir: filepath.Join(t.TempDir(), "state"),
		Root:     root,
		Args:     extraArgs,
		Env:      env,
	}
	d.Restart()
	t.Cleanup(d.Stop)
	return d
}

// Command returns the exec.Cmd that would run oriond with this Daemon's
// socket, state directory and root, for tests that start it themselves.
func (d *Daemon) Command(extraArgs ...string) *exec.Cmd {
	args := append([]string{"run", "--socket", d.Socket, "--state-dir", d.StateDir,
		"--allow-root", d.Root, "--log-level", "debug"}, d.Args...)
	args = append(args, extraArgs...)
	cmd := exec.Command(Binary(d.t), args...)
	// A developer's own config file must not leak into the tests.
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_STATE_DIR=", "ORION_ALLOW_ROOTS=", "ORION_CONFIG=/dev/null")
	cmd.Env = append(cmd.Env, d.Env...)
	return cmd
}

// Restart starts oriond (again) and waits until its socket answers.
func (d *Daemon) Restart() {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		d.t.Fatal("testdaemon: Restart while the daemon runs; Kill or Stop it first")
	}
	cmd := d.Command()
	d.logs = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("unix", d.Socket)
		if err == nil {
			c.Close()
			d.waitCh = exited
			return
		}
		select {
		case err := <-exited:
			d.cmd = nil
			d.t.Fatalf("oriond exited before serving: %v\n%s", err, d.logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("oriond did not open %s within 30s\n%s", d.Socket, d.logs.String())
		}
	}
}

// Wait waits for oriond to exit by itself (as an armed failpoint makes it)
// and returns how it exited.
func (d *Daemon) Wait() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return nil
	}
	select {
	case err := <-d.waitCh:
		d.cmd = nil
		return err
	case <-time.After(60 * time.Second):
		d.t.Fatalf("oriond did not exit within 60s\n%s", d.logs.String())
		return nil
	}
}

// Kill ends oriond with SIGKILL, as a crash would, and waits for it to exit.
func (d *Daemon) Kill() {
	d.signal(syscall.SIGKILL, 0)
}

// Stop ends oriond with SIGTERM, and with SIGKILL if it has not exited
// after 10s. It is safe to call on a stopped daemon.
func (d *Daemon) Stop() {
	d.signal(syscall.SIGTERM, 10*time.Second)
}

func (d *Daemon) signal(sig syscall.Signal, grace time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-d.waitCh:
			d.cmd = nil
			return
		case <-time.After(grace):
			d.t.Errorf("oriond ignored %v for %s; killing it\n%s", sig, grace, d.logs.String())
			d.cmd.Process.Kill()
		}
	}
	<-d.waitCh
	d.cmd = nil
}

// Logs returns everything oriond printed since its last start.
func (d *Daemon) Logs() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.logs == nil {
		return ""
	}
	return d.logs.String()
}

// WaitLog waits until oriond's log since its last start holds each of
// lines (substrings of it) and returns the log; the test fails, showing the
// log, if one never appears. A line the daemon wrote before it answered a
// request reaches the test through a pipe and exec's copying goroutine, so
// on a loaded machine it can show up after the answer: a test that reads
// Logs() right after a reply may miss a line that is there.
func (d *Daemon) WaitLog(lines ...string) string {
	d.t.Helper()
	deadline := time.Now().Add(waitLogTimeout)
	for {
		logs := d.Logs()
		missing := ""
		for _, l := range lines {
			if !strings.Contains(logs, l) {
				missing = l
				break
			}
		}
		if missing == "" {
			return logs
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("oriond did not log %q within %s; its log:\n%s", missing, waitLogTimeout, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLogTimeout is how long WaitLog waits for a line: far longer than a
// pipe takes on any machine, so that only a line never written fails.
const waitLogTimeout = 30 * time.Second

// PID is the running oriond's process id, or 0 when it is not running, for
// tests that read its memory or open descriptors from /proc.
func (d *Daemon) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}
