package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The packaged proxy unit is exactly what install --with-proxy writes for
// /usr/bin/orionctl, and systemd accepts it.
func TestProxyUnit(t *testing.T) {
	text, err := proxyUnit("/usr/bin/orionctl")
	if err != nil {
		t.Fatal(err)
	}
	u := checkUnitSyntax(t, text)
	if got, want := u["Service"]["ExecStart"], "/usr/bin/orionctl proxy --listen 127.0.0.1:8788 --workspace-root %h"; len(got) != 1 || got[0] != want {
		t.Fatalf("ExecStart=%v, want %s", got, want)
	}
	if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "default.target" {
		t.Fatalf("WantedBy=%v: a user manager has only default.target", got)
	}
	if got := u["Unit"]["After"]; len(got) != 1 || got[0] != "oriond.service" {
		t.Fatalf("After=%v", got)
	}
	golden(t, "../../../packaging/systemd/orionctl-proxy.service", text)

	// The path is quoted like oriond's, and %h stays systemd's specifier.
	quoted, err := proxyUnit("/opt/my apps/100%/orionctl")
	if err != nil {
		t.Fatal(err)
	}
	if want := `ExecStart="/opt/my apps/100%%/orionctl" proxy --listen 127.0.0.1:8788 --workspace-root %h` + "\n"; !strings.Contains(quoted, want) {
		t.Fatalf("want %q in\n%s", want, quoted)
	}
	if _, err := proxyUnit("/usr/bin/orion\nctl"); err == nil {
		t.Fatal("rendered a unit for a path with a newline")
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze; the unit is checked by syntax only")
		return
	}
	dir := t.TempDir()
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "my apps", "orionctl")
	os.Mkdir(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	text, err = proxyUnit(bin)
	if err != nil {
		t.Fatal(err)
	}
	verifyUnitText(t, sa, dir, "orionctl-proxy.service", text, false)
}

// withProxyEnv is a user-service environment on a systemd machine whose
// oriond lives in a directory of its own, with a fake systemctl.
func withProxyEnv(t *testing.T) (env serviceEnv, home, bindir string, setState func(unit, state string), logPath string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home) // kardianos finds the user unit directory by it
	logPath, setState = fakeSystemctl(t)
	bindir = t.TempDir()
	env = realServiceEnv(func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})
	env.goos = "linux"
	env.systemdBooted = func() bool { return true }
	env.executable = func() (string, error) { return filepath.Join(bindir, "oriond"), nil }
	env.lookPath = func(string) (string, error) { return "", exec.ErrNotFound }
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
	if want, _ := proxyUnit(orionctl); string(got) != want {
		t.Fatalf("installed proxy unit:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Fatalf("oriond's unit: %v", err)
	}
	step(1, "already exists", "install", "--with-proxy")

	step(exitNotRunning, "orionctl-proxy.service: installed", "status")
	setState("oriond.service", "active")
	step(exitNotRunning, "orionctl-proxy.service: installed ("+proxyPath+") but not running", "status")
	setState("orionctl-proxy.service", "active")
	step(0, "orionctl-proxy.service: running", "status")
	setState("orionctl-proxy.service", "failed")
	step(exitNotRunning, "orionctl-proxy.service: not running (service in failed state)", "status")

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

func TestFindOrionctl(t *testing.T) {
	t.Run("NextToOriond", func(t *testing.T) {
		env, _, bindir, _, _ := withProxyEnv(t)
		writeExecutable(t, filepath.Join(bindir, "orionctl"))
		env.lookPath = func(string) (string, error) { return "/usr/bin/orionctl", nil }
		if got, err := env.findOrionctl(); err != nil || got != filepath.Join(bindir, "orionctl") {
			t.Fatalf("got %q, %v; want the one next to oriond", got, err)
		}
	})
	t.Run("OnPath", func(t *testing.T) {
		env, _, bindir, _, _ := withProxyEnv(t)
		// Not executable: not a program to run.
		os.WriteFile(filepath.Join(bindir, "orionctl"), nil, 0o644)
		env.lookPath = func(string) (string, error) { return "/usr/local/bin/orionctl", nil }
		if got, err := env.findOrionctl(); err != nil || got != "/usr/local/bin/orionctl" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("Absent", func(t *testing.T) {
		env, home, bindir, _, _ := withProxyEnv(t)
		_, err := runService(t, env, "install", "--with-proxy")
		if err == nil || !strings.Contains(err.Error(), "orionctl is neither next to oriond (in "+bindir+") nor on PATH") {
			t.Fatalf("err %v", err)
		}
		// Nothing was installed, oriond's unit included.
		if entries, _ := os.ReadDir(filepath.Join(home, ".config/systemd/user")); len(entries) != 0 {
			t.Fatalf("a failed install left %v", entries)
		}
	})
}

func TestWithProxyRefusals(t *testing.T) {
	env, _, bindir, _, _ := withProxyEnv(t)
	writeExecutable(t, filepath.Join(bindir, "orionctl"))
	env.euid = 0
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
