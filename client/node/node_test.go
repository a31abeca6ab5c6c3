// Package node_test runs the Node client's own test suite (node --test)
// from `go test ./...`, so the README's one test command covers it too.
package node_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

func TestNodeClientSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the Node suite is skipped in -short mode")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed; the Node client's tests need Node 20+ and npm")
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(npm, args...)
		cmd.Env = append(os.Environ(), "ORIOND_BIN="+testdaemon.Binary(t))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("npm %v: %v\n%s", args, err, out)
		}
		t.Logf("npm %v:\n%s", args, tail(out, 1500))
	}
	// npm ci installs exactly the lockfile, as a fresh machine would.
	run("ci", "--no-audit", "--no-fund")
	run("test")
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
