package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/service"
)

// withProxyEnv is a user-service environment on a systemd machine whose
// oriond lives in a directory of its own, with a fake systemctl.
func withProxyEnv(t *testing.T) (env service.Env, home, bindir string, setState func(unit, state string), logPath string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home) // kardianos finds the user unit directory by it
	logPath, setState = fakeSystemctl(t)
	bindir = t.TempDir()
	env = service.RealEnv(func(k string) string {
		return testEnv(k, home)
	})
	env.GOOS = "linux"
	env.SystemdBooted = func() bool { return true }
	env.Executable = func() (string, error) { return filepath.Join(bindir, "oriond"), nil }
	env.LookPath = func(string) (string, error) { return "", exec.ErrNotFound }
	return env, home, bindir, setState, logPath
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestUserServiceLifecycleWithProxy(t *testing.T) {
	env, home, bindir, setState, logPath := withProxyEnv(t)
	orionctl := filepath.Join(bindir, "orionctl")
	writeExecutable(t, orionctl)
	unit := filepath.Join(home, ".config/systemd/user/oriond.service")
	proxyPath := filepath.Join(home, ".config/systemd/user/orionctl-proxy.service")
	step := stepper(t, env)

	step(0, "installed "+proxyPath+" (systemd user unit orionctl-proxy.service, enabled)", "install", "--with-proxy")
	got, err := os.ReadFile(proxyPath)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := service.RenderProxy(orionctl); string(got) != want {
		t.Fatalf("installed proxy unit:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Fatalf("oriond's unit: %v", err)
	}
	step(1, "already exists", "install", "--with-proxy")

	step(service.ExitNotRunning, "orionctl-proxy.service: installed", "status")
	setState("oriond.service", "active")
	step(service.ExitNotRunning, "orionctl-proxy.service: installed ("+proxyPath+") but not running", "status")
	setState("orionctl-proxy.service", "active")
	step(0, "orionctl-proxy.service: running", "status")
	setState("orionctl-proxy.service", "failed")
	step(service.ExitNotRunning, "orionctl-proxy.service: not running (service in failed state)", "status")

	step(0, "orionctl-proxy.service: start done", "start")
	step(0, "orionctl-proxy.service: restart done", "restart")
	step(0, "orionctl-proxy.service: stop done", "stop")
	step(0, "orionctl-proxy.service: uninstall done", "uninstall")
	for _, p := range []string{unit, proxyPath} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("uninstall left %s: %v", p, err)
		}
	}

	b, _ := os.ReadFile(logPath)
	log := string(b)
	for _, want := range []string{"enable --user orionctl-proxy.service", "disable --user orionctl-proxy.service",
		"is-active orionctl-proxy.service --user"} {
		if !strings.Contains(log, want+"\n") {
			t.Errorf("systemctl was not called with %q; calls:\n%s", want, log)
		}
	}
	// The proxy starts after oriond and stops before it.
	order := func(first, second string) {
		t.Helper()
		if i, j := strings.Index(log, first+"\n"), strings.Index(log, second+"\n"); i < 0 || j < 0 || i > j {
			t.Errorf("want %q before %q; calls:\n%s", first, second, log)
		}
	}
	order("start --user oriond.service", "start --user orionctl-proxy.service")
	order("restart --user oriond.service", "restart --user orionctl-proxy.service")
	order("stop --user orionctl-proxy.service", "stop --user oriond.service")
	order("disable --user orionctl-proxy.service", "disable --user oriond.service")
}

// Without --with-proxy, nothing about the proxy is installed or said.
func TestServiceWithoutProxy(t *testing.T) {
	env, home, bindir, setState, _ := withProxyEnv(t)
	writeExecutable(t, filepath.Join(bindir, "orionctl"))
	step := stepper(t, env)
	step(0, "installed", "install")
	if _, err := os.Stat(filepath.Join(home, ".config/systemd/user/orionctl-proxy.service")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("install without --with-proxy wrote the proxy's unit: %v", err)
	}
	setState("oriond.service", "active")
	out, err := runService(t, env, "status")
	if err != nil || strings.Contains(out, "proxy") {
		t.Fatalf("status: %v %q", err, out)
	}
}

func TestWithProxyRefusals(t *testing.T) {
	env, _, bindir, _, _ := withProxyEnv(t)
	writeExecutable(t, filepath.Join(bindir, "orionctl"))
	env.EUID = 0
	if _, err := runService(t, env, "install", "--system", "--run-as", "alice", "--with-proxy"); err == nil ||
		!strings.Contains(err.Error(), "not of the machine") {
		t.Fatalf("--system --with-proxy: %v", err)
	}
	if _, err := runService(t, env, "install", "--print", "--platform", "launchd", "--with-proxy"); err == nil ||
		!strings.Contains(err.Error(), "systemd user unit") {
		t.Fatalf("launchd --with-proxy: %v", err)
	}
	out, err := runService(t, env, "install", "--print", "--with-proxy")
	if err != nil || !strings.Contains(out, "# oriond.service:") ||
		!strings.Contains(out, "\n# orionctl-proxy.service:") || !strings.Contains(out, "ExecStart="+filepath.Join(bindir, "orionctl")+" proxy") {
		t.Fatalf("install --print --with-proxy: %v\n%s", err, out)
	}
}

// Without orionctl next to oriond or on PATH, install --with-proxy fails
// and installs nothing, oriond's unit included.
func TestWithProxyWithoutOrionctl(t *testing.T) {
	env, home, bindir, _, _ := withProxyEnv(t)
	_, err := runService(t, env, "install", "--with-proxy")
	if err == nil || !strings.Contains(err.Error(), "orionctl is neither next to oriond (in "+bindir+") nor on PATH") {
		t.Fatalf("err %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".config/systemd/user")); len(entries) != 0 {
		t.Fatalf("a failed install left %v", entries)
	}
}
