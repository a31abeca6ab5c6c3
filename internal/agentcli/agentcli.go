// Package agentcli installs agent CLIs from npm (Codex CLI, Gemini CLI,
// and any other published the same way) for tests that run them headless
// against a local endpoint. It is used by tests only.
package agentcli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testcache"
)

// CLI is one agent CLI as npm publishes it.
type CLI struct {
	// Name names the CLI in messages and its cache directory
	// (testcache.Path(Name + "-" + Version)).
	Name string
	// Package is the npm package; Version is pinned exactly, since the
	// requests a CLI sends change between releases and the cache is keyed
	// by it.
	Package, Version string
	// Bin is the command under node_modules/.bin.
	Bin string
}

// The CLIs the tests run, at the versions checked to work offline.
var (
	Codex  = CLI{Name: "codex", Package: "@openai/codex", Version: "0.169.0", Bin: "codex"}
	Gemini = CLI{Name: "gemini-cli", Package: "@google/gemini-cli", Version: "0.61.0", Bin: "gemini"}
)

type result struct {
	bin, skip string
}

var (
	mu      sync.Mutex
	results = map[CLI]*result{}
)

// Install installs c from the npm registry, or skips the test saying why
// it could not (fails instead when ORION_REQUIRE_REAL_CLIENTS is set, as
// in CI). The install is kept in the tests' cache so that later runs reuse
// it (Codex is about 400 MB); it is installed into a staging directory and
// renamed into place, so a run killed mid-install leaves no half cache.
// It returns the binary's path.
func Install(t testing.TB, c CLI) string {
	t.Helper()
	mu.Lock()
	r, ok := results[c]
	if !ok {
		r = install(c)
		results[c] = r
	}
	mu.Unlock()
	if r.skip != "" {
		if os.Getenv("ORION_REQUIRE_REAL_CLIENTS") != "" {
			t.Fatalf("ORION_REQUIRE_REAL_CLIENTS is set, and %s could not be installed: %s", c.Name, r.skip)
		}
		t.Skipf("skipping %s: %s", c.Name, r.skip)
	}
	return r.bin
}

func install(c CLI) *result {
	name := c.Name + "-" + c.Version
	dir := testcache.Path(name)
	b := filepath.Join(dir, "node_modules", ".bin", c.Bin)
	if runs(b) == nil {
		return &result{bin: b}
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return &result{skip: tool + " is not installed"}
		}
	}
	tmp, err := testcache.Staging(name)
	if err != nil {
		return &result{skip: err.Error()}
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
		return &result{skip: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pkg := c.Package + "@" + c.Version
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", pkg)
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return &result{skip: fmt.Sprintf("npm install %s failed (registry unreachable?): %v\n%s", pkg, err, out.String())}
	}
	if err := runs(filepath.Join(tmp, "node_modules", ".bin", c.Bin)); err != nil {
		return &result{skip: fmt.Sprintf("%s installed but does not run on this machine: %v", pkg, err)}
	}
	os.RemoveAll(dir) // a broken cache from an older run
	if err := os.Rename(tmp, dir); err != nil && runs(b) != nil {
		return &result{skip: fmt.Sprintf("caching %s in %s: %v", pkg, dir, err)}
	}
	return &result{bin: b}
}

// runs checks that an installed CLI starts at all.
func runs(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(os.Environ(), "GEMINI_CLI_NO_RELAUNCH=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %v: %s", bin, err, bytes.TrimSpace(out))
	}
	return nil
}

// Run runs cmd, an agent CLI's run that the caller has set up (Dir, Env,
// a context with a deadline), to its end and returns what it wrote. It
// logs how long the run took under what, and fails the test with both
// outputs, and more when given (a proxy's or a model's log), when the
// run fails: a CLI that failed says why only there.
func Run(t testing.TB, cmd *exec.Cmd, what string, more ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s took %v", what, time.Since(start))
	if err != nil {
		t.Fatalf("%s: %v\nstdout %s\nstderr %s%s", what, err, out.String(), errb.String(), strings.Join(more, ""))
	}
	return out.String(), errb.String()
}
