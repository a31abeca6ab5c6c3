package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestExecTraceWrittenAtStop: with $ORION_EXEC_TRACE set, the real oriond
// writes a Go execution trace there, whole once it is stopped gracefully.
func TestExecTraceWrittenAtStop(t *testing.T) {
	bin := testdaemon.Binary(t)
	sockDir, err := paths.SocketTempDir("orion", "oriond.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "oriond.sock")
	out := filepath.Join(t.TempDir(), "oriond.trace")
	cmd := exec.Command(bin, "run", "--socket", sock, "--state-dir", t.TempDir(), "--allow-root", t.TempDir())
	cmd.Env = append(os.Environ(), "ORION_EXEC_TRACE="+out, "ORION_CONFIG=", "ORION_SOCKET=", "ORION_STATE_DIR=", "ORION_ALLOW_ROOTS=")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill() // a no-op once it has stopped
	waitServing(t, sock, exited, &logs)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("oriond stopped with %v\n%s", err, logs.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// An execution trace starts "go 1.NN trace" and holds at least the
	// goroutines that ran, well past its header.
	if !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b[:16], []byte(" trace")) || len(b) < 1024 {
		t.Fatalf("not a whole execution trace: %d bytes, starting %q", len(b), b[:min(len(b), 16)])
	}
}
