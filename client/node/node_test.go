// Package node_test runs the Node client's own test suite (node --test)
// from `go test ./...`, so the README's one test command covers it too.
package node_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

	// The packed client installs into a project without an install script
	// (npm 11 warns about each one, prepare included) and loads.
	packDir, app := t.TempDir(), t.TempDir()
	run("pack", "--pack-destination", packDir)
	in := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	tgz, _ := filepath.Glob(filepath.Join(packDir, "*.tgz"))
	if len(tgz) != 1 {
		t.Fatalf("npm pack made %v", tgz)
	}
	in(app, npm, "init", "-y")
	out := in(app, npm, "install", "--no-audit", "--no-fund", "--prefer-offline", tgz[0])
	if strings.Contains(out, "install-scripts") || strings.Contains(out, "prepare") {
		t.Errorf("installing the packed client warned about its scripts:\n%s", out)
	}
	if got := in(app, "node", "-e", `console.log(typeof require("@orion-agent/oriond-client").OrionClient)`); strings.TrimSpace(got) != "function" {
		t.Errorf("the installed client does not load: %s", got)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
