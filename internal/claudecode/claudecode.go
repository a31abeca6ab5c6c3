// Package claudecode installs Claude Code for tests that run it headless
// against a local endpoint, and gives the environment that keeps it
// offline. It is used by tests only.
package claudecode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testcache"
)

// Version is the Claude Code release the tests install. It is pinned
// exactly, not by major: Claude Code ships several releases a week, its
// requests (tools, betas, side requests) change with them, and the cache
// below is keyed by it. ORION_CLAUDE_CODE_VERSION overrides it.
const Version = "2.1.332"

var (
	once    sync.Once
	bin     string
	version string
	skip    string
)

// Install installs @anthropic-ai/claude-code from the npm registry, or
// skips the test saying why it could not. The install (a 240 MB native
// binary) is kept in the tests' cache (internal/testcache) as
// claude-code-VERSION, so that later runs reuse it instead of downloading
// it again; it is installed into a staging directory and renamed into
// place, so a run that is killed mid-install leaves no half cache behind. It returns the binary's path
// and the version.
func Install(t testing.TB) (string, string) {
	t.Helper()
	once.Do(func() {
		version = Version
		if v := os.Getenv("ORION_CLAUDE_CODE_VERSION"); v != "" {
			version = v
		}
		dir := testcache.Path("claude-code-" + version)
		b := filepath.Join(dir, "node_modules", ".bin", "claude")
		if runs(b) == nil {
			bin = b
			return
		}
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				skip = tool + " is not installed"
				return
			}
		}
		tmp, err := testcache.Staging("claude-code-" + version)
		if err != nil {
			skip = err.Error()
			return
		}
		defer os.RemoveAll(tmp)
		if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
			skip = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		pkg := "@anthropic-ai/claude-code@" + version
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", pkg)
		cmd.Dir = tmp
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			skip = fmt.Sprintf("npm install %s failed (registry unreachable?): %v\n%s", pkg, err, out.String())
			return
		}
		if err := runs(filepath.Join(tmp, "node_modules", ".bin", "claude")); err != nil {
			skip = fmt.Sprintf("%s installed but does not run on this machine: %v", pkg, err)
			return
		}
		os.RemoveAll(dir) // a broken cache from an older run
		if err := os.Rename(tmp, dir); err != nil && runs(b) != nil {
			skip = fmt.Sprintf("caching %s in %s: %v", pkg, dir, err)
			return
		}
		bin = b
	})
	if skip != "" {
		// CI installs every real client: there a failed install is a
		// failure, not a skip that would hide the tests it gates.
		if os.Getenv("ORION_REQUIRE_REAL_CLIENTS") != "" {
			t.Fatal("ORION_REQUIRE_REAL_CLIENTS is set, and Claude Code could not be installed: " + skip)
		}
		t.Skip("skipping Claude Code: " + skip)
	}
	return bin, version
}

// runs checks that an installed claude starts at all.
func runs(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %v: %s", bin, err, bytes.TrimSpace(out))
	}
	return nil
}

// Env is the environment for running Claude Code offline: a dummy key, a
// HOME of its own (no login, settings or history of the person running
// the tests), telemetry, error reports, the auto-updater and other
// non-essential traffic off, and any request that would still leave the
// machine sent to a proxy that refuses it. It is built from scratch, so
// that the runner's own ANTHROPIC_* or CLAUDE_* settings do not leak in;
// baseURL, when not empty, is ANTHROPIC_BASE_URL. Its TMPDIR is inside
// home too: Claude Code leaves a directory per working directory and
// session in it (claude-UID/…), which goes with the test's home.
func Env(home, baseURL string) []string {
	tmp := filepath.Join(home, "tmp")
	os.MkdirAll(tmp, 0o700)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"TMPDIR=" + tmp,
		"ANTHROPIC_API_KEY=sk-ant-dummy-claude-code",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"HTTPS_PROXY=http://127.0.0.1:9",
		"HTTP_PROXY=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost",
	}
	if baseURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+baseURL)
	}
	return env
}
