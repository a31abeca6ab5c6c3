package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
)

func TestSocketIsPrivate(t *testing.T) {
	d := testdaemon.Start(t)
	fi, err := os.Stat(filepath.Dir(d.Socket))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Fatalf("socket directory mode %o, want 700", got)
	}
	fi, err = os.Stat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Fatalf("socket mode %o, want 600", got)
	}
}

// runToExit runs a second oriond and returns its exit code and output.
func runToExit(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("second oriond kept running:\n%s", out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func TestSecondDaemonExitsWithClearMessage(t *testing.T) {
	d := testdaemon.Start(t)
	t.Run("SameSocket", func(t *testing.T) {
		other := t.TempDir()
		cmd := exec.Command(testdaemon.Binary(t), "run", "--socket", d.Socket, "--state-dir", other, "--allow-root", d.Root)
		code, out := runToExit(t, cmd)
		if code == 0 || !strings.Contains(out, "already running") || !strings.Contains(out, d.Socket) {
			t.Fatalf("exit %d, output:\n%s\nwant a non-zero exit naming the socket", code, out)
		}
	})
	t.Run("SameStateDir", func(t *testing.T) {
		sock := filepath.Join(filepath.Dir(d.Socket), "other.sock")
		cmd := exec.Command(testdaemon.Binary(t), "run", "--socket", sock, "--state-dir", d.StateDir, "--allow-root", d.Root)
		code, out := runToExit(t, cmd)
		if code == 0 || !strings.Contains(out, "already running") || !strings.Contains(out, d.StateDir) {
			t.Fatalf("exit %d, output:\n%s\nwant a non-zero exit naming the state directory", code, out)
		}
	})
	// The first daemon is unharmed.
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatalf("first daemon stopped answering: %v", err)
	}
	c.Close()
}

func TestStaleSocketIsRemoved(t *testing.T) {
	d := testdaemon.Start(t)
	d.Kill()
	if _, err := os.Stat(d.Socket); err != nil {
		t.Fatalf("expected SIGKILL to leave the socket behind: %v", err)
	}
	d.Restart()
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestSocketPathTooLong(t *testing.T) {
	d := testdaemon.Start(t)
	long := "/tmp/" + strings.Repeat("s", 120) + "/oriond.sock"
	cmd := exec.Command(testdaemon.Binary(t), "run", "--socket", long, "--state-dir", t.TempDir(), "--allow-root", d.Root)
	code, out := runToExit(t, cmd)
	if code == 0 || !strings.Contains(out, "at most") {
		t.Fatalf("exit %d, output:\n%s\nwant a refusal explaining the length limit", code, out)
	}
}

// TestPeerWithAnotherUIDIsRefused opens the socket's directory to everyone,
// so only the daemon's own peer check stands between another user and it.
func TestPeerWithAnotherUIDIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	d := testdaemon.StartPublic(t)
	// The socket answers as soon as it listens, a moment before the
	// daemon sets its mode to 0600: opening it before that would be undone.
	for deadline := time.Now().Add(10 * time.Second); ; {
		fi, err := os.Stat(d.Socket)
		if err == nil && fi.Mode().Perm() == 0o600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket mode never became 0600: %v, %v", fi, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range []string{filepath.Dir(filepath.Dir(d.Socket)), filepath.Dir(d.Socket), d.Socket} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// A tiny client run as nobody: it sends daemon.status and prints
	// whatever comes back before the connection closes.
	// The test binary sits in a directory only we can read; nobody needs
	// its own copy.
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	binDir := testdaemon.PublicDir(t)
	helper := filepath.Join(binDir, "helper.test")
	if err := os.WriteFile(helper, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helper, "-test.run=^TestHelperClient$")
	cmd.Dir = binDir
	cmd.Env = append(os.Environ(), "ORION_HELPER_SOCKET="+d.Socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper client failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "REPLY-BYTES 0") {
		t.Fatalf("a peer with another uid got an answer:\n%s", out)
	}
	d.WaitLog("refusing a connection from another user")
}

// TestHelperClient is not a test: TestPeerWithAnotherUIDIsRefused runs it in
// a child process under another uid.
func TestHelperClient(t *testing.T) {
	sock := os.Getenv("ORION_HELPER_SOCKET")
	if sock == "" {
		t.Skip("helper process only")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"daemon.status"}`
	if _, err := c.Write([]byte("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)); err != nil {
		// The daemon may already have closed the connection.
		os.Stdout.WriteString("REPLY-BYTES 0\n")
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	os.Stdout.WriteString("REPLY-BYTES " + strconv.Itoa(n) + "\n")
}

// A mistyped command or flag is a usage error: exit 2, as for orionctl.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{"rnu"}, {"run", "--allowroot", "x"}} {
		code, out := runToExit(t, exec.Command(testdaemon.Binary(t), args...))
		if code != 2 {
			t.Errorf("oriond %q: exit %d, want 2:\n%s", args, code, out)
		}
	}
}
