package attack

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// nobody is the other user of TestImpostorDaemon.
const nobody = 65534

// TestImpostorDaemon: where XDG_RUNTIME_DIR is unset, another user
// creates the fallback directory (<tmp>/orion-<uid>) first and serves a
// daemon of its own there. `orionctl write` refuses to talk to it, naming
// its owner and what to set, and sends it nothing (not the secret on its
// stdin); the real oriond refuses to start there, saying the same.
func TestImpostorDaemon(t *testing.T) {
	if os.Getuid() == nobody || os.Getuid() != 0 {
		t.Skip("running a process as another uid needs root")
	}
	// A shared temp directory like /tmp: world-writable and sticky.
	tmp := testdaemon.PublicDir(t)
	if err := os.Chmod(tmp, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	env := []string{"TMPDIR=" + tmp, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	fallback := filepath.Join(tmp, fmt.Sprintf("orion-%d", os.Getuid()))
	sock := filepath.Join(fallback, "oriond.sock")

	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "impostor.test")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	imp := exec.Command(bin, "-test.run=^TestImpostorHelper$", "-test.count=1")
	imp.Dir = tmp
	// The helper's TestMain makes a directory in TMPDIR, which may be
	// closed to another user: the shared directory is its TMPDIR.
	imp.Env = append(os.Environ(), "ORION_IMPOSTOR_SOCKET="+sock, "TMPDIR="+tmp)
	imp.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, _ := imp.StdinPipe()
	stdout, _ := imp.StdoutPipe()
	imp.Stderr = os.Stderr
	if err := imp.Start(); err != nil {
		t.Fatal(err)
	}
	defer imp.Wait()
	defer stdin.Close()
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "LISTENING" {
		t.Fatalf("the impostor did not start: %q", out.Text())
	}

	target := filepath.Join(t.TempDir(), "secret.txt")
	cmd := exec.Command(testdaemon.Orionctl(t), "write", target)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("password: hunter2\n")
	var stderr, stdoutBuf bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdoutBuf
	err = cmd.Run()
	t.Logf("orionctl write: %v\nstdout: %s\nstderr: %s", err, stdoutBuf.String(), stderr.String())
	if err == nil || strings.Contains(stdoutBuf.String(), "rote") {
		t.Fatal("orionctl wrote through another user's daemon")
	}
	if msg := stderr.String(); !strings.Contains(msg, "uid 65534") || !strings.Contains(msg, "XDG_RUNTIME_DIR") {
		t.Fatalf("orionctl's refusal does not name the owner and what to set: %s", msg)
	}

	// The real daemon, started by the same user with the same
	// environment, refuses the directory.
	d := exec.Command(testdaemon.Binary(t), "run", "--allow-root", t.TempDir(), "--state-dir", filepath.Join(t.TempDir(), "state"))
	d.Env = env
	dout, err := d.CombinedOutput()
	t.Logf("oriond run: %v\n%s", err, dout)
	if err == nil || !strings.Contains(string(dout), "uid 65534") || !strings.Contains(string(dout), "XDG_RUNTIME_DIR") {
		t.Fatalf("oriond started in another user's directory, or did not say why not: %v\n%s", err, dout)
	}

	stdin.Close()
	var said string
	for out.Scan() {
		said += out.Text() + "\n"
	}
	t.Logf("the impostor: %s", said)
	if !strings.Contains(said, "RECEIVED 0\n") {
		t.Fatalf("the impostor received content: %s", said)
	}
}

// TestImpostorHelper is not a test: TestImpostorDaemon runs it as another
// user. It makes the victim's fallback socket directory, listens there,
// and counts what clients send until its stdin closes.
func TestImpostorHelper(t *testing.T) {
	sock := os.Getenv("ORION_IMPOSTOR_SOCKET")
	if sock == "" {
		t.Skip("helper process only")
	}
	if err := os.Mkdir(filepath.Dir(sock), 0o700); err != nil {
		fmt.Println("ERROR", err)
		return
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	os.Chmod(sock, 0o777)
	var received atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					received.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	fmt.Println("LISTENING")
	bufio.NewReader(os.Stdin).ReadString('\n')
	time.Sleep(100 * time.Millisecond)
	fmt.Printf("RECEIVED %d\n", received.Load())
}
