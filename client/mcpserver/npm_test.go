package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testcache"
)

// npmPackages installs pinned npm packages into a directory of the tests'
// cache (internal/testcache), named mcp- and the packages with their
// versions, so that later
// runs reuse it. It installs into a temporary sibling and renames it into
// place, so a run killed mid-install leaves no half cache. When npm or the
// registry is not there the test is skipped, saying why; with
// $ORION_REQUIRE_REAL_CLIENTS set (.ci/run sets it) it fails instead.
func npmPackages(t *testing.T, pkgs ...string) string {
	t.Helper()
	key := strings.NewReplacer("@", "", "/", "-").Replace(strings.Join(pkgs, "+"))
	dir := testcache.Path("mcp-" + key)
	if _, err := os.Stat(filepath.Join(dir, "installed")); err == nil {
		return dir
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "%s is not installed", tool)
		}
	}
	tmp, err := testcache.Staging("mcp-" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)...)
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		skipOrFail(t, "npm install %s failed (registry unreachable?): %v\n%s", strings.Join(pkgs, " "), err, out.String())
	}
	if err := os.WriteFile(filepath.Join(tmp, "installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir) // a broken cache from an older run
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
			t.Fatalf("caching %s in %s: %v", pkgs, dir, err)
		}
	}
	return dir
}

// skipOrFail skips a test that needs a real client it cannot get, or fails
// it where the real clients are required.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("ORION_REQUIRE_REAL_CLIENTS") != "" {
		t.Fatalf("ORION_REQUIRE_REAL_CLIENTS is set, and "+format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}
