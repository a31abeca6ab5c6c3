package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// nobody is the uid the fake daemons run as, another user than the test's.
const nobody = 65534

// fakeDaemon listens on socket and counts the bytes clients send it.
type fakeDaemon struct {
	ln       net.Listener
	received atomic.Int64
	accepted atomic.Int64
}

func listenFake(t *testing.T, socket string) *fakeDaemon {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDaemon{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.accepted.Add(1)
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					f.received.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return f
}

// refused checks that Dial refused the socket naming its owner, and sent
// nothing.
func refused(t *testing.T, socket, owner string, sent func() int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, socket, client.Options{})
	if err == nil {
		c.Close()
		t.Fatal("Dial talked to a socket of another user")
	}
	if !errors.Is(err, client.ErrUntrustedSocket) || !strings.Contains(err.Error(), owner) ||
		!strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Fatalf("Dial: %v; want a refusal naming %s and what to set", err, owner)
	}
	time.Sleep(100 * time.Millisecond)
	if n := sent(); n != 0 {
		t.Fatalf("the client sent %d bytes to the other user's socket", n)
	}
	t.Logf("refused: %v", err)
}

// TestDialRefusesAnotherUsersSocket: a socket, or the directory holding
// it, that belongs to another user is refused before anything is sent, as
// in the fallback directory another user created first.
func TestDialRefusesAnotherUsersSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown needs root")
	}
	t.Run("Socket", func(t *testing.T) {
		dir, _ := paths.SocketTempDir("orion-trust", "oriond.sock")
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "oriond.sock")
		f := listenFake(t, sock)
		if err := os.Lchown(sock, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		refused(t, sock, fmt.Sprintf("uid %d", nobody), f.received.Load)
		if f.accepted.Load() != 0 {
			t.Fatal("the client connected to a socket it should not trust")
		}
	})
	t.Run("Directory", func(t *testing.T) {
		dir, _ := paths.SocketTempDir("orion-trust", "oriond.sock")
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "oriond.sock")
		f := listenFake(t, sock)
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		refused(t, sock, fmt.Sprintf("uid %d", nobody), f.received.Load)
	})
	t.Run("WritableDirectory", func(t *testing.T) {
		dir, _ := paths.SocketTempDir("orion-trust", "oriond.sock")
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "oriond.sock")
		f := listenFake(t, sock)
		os.Chmod(dir, 0o777)
		refused(t, sock, "writable by others", f.received.Load)
	})
}

// TestDialRefusesAnotherUsersDaemon: a socket file that is ours, in a
// directory that is ours, served by a process of another uid (it listened
// first; the file was then handed to us) is refused by the peer's
// credentials, and the fake daemon receives nothing.
func TestDialRefusesAnotherUsersDaemon(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a process as another uid needs root")
	}
	dir := testdaemon.PublicDir(t)
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "oriond.sock")
	// The test binary sits in a directory only we can read: nobody gets a
	// copy.
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fake.test")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestFakeDaemonHelper$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ORION_FAKE_DAEMON_SOCKET="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "LISTENING" {
		t.Fatalf("the fake daemon did not start: %q", out.Text())
	}
	// Hand the socket and the directory to us: only the peer's
	// credentials still tell.
	if err := os.Lchown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	refused(t, sock, fmt.Sprintf("uid %d", nobody), func() int64 { return 0 })
	stdin.Close()
	var got string
	for out.Scan() {
		got += out.Text() + "\n"
	}
	if !strings.Contains(got, "ACCEPTED 1 RECEIVED 0") {
		t.Fatalf("the fake daemon of another uid says:\n%s", got)
	}
}

// TestFakeDaemonHelper is not a test: TestDialRefusesAnotherUsersDaemon
// runs it as another uid. It listens, says LISTENING, counts what clients
// send until stdin closes, then says how much.
func TestFakeDaemonHelper(t *testing.T) {
	sock := os.Getenv("ORION_FAKE_DAEMON_SOCKET")
	if sock == "" {
		t.Skip("helper process only")
	}
	f := &fakeDaemon{}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	f.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.accepted.Add(1)
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					f.received.Add(int64(n))
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
	fmt.Printf("ACCEPTED %d RECEIVED %d\n", f.accepted.Load(), f.received.Load())
}
