package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/service"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// runService runs `oriond service ...` in-process with env.
func runService(t *testing.T, env service.Env, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd(env.Getenv)
	// Swap the real service command for one on env.
	for _, c := range root.Commands() {
		if c.Name() == "service" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newServiceCmdEnv(env))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"service"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// testEnv is the environment of the service tests: HOME, and a runtime
// directory where no daemon runs (install would otherwise carry the
// configuration of one running on the default socket into the unit).
func testEnv(k, home string) string {
	switch k {
	case "HOME":
		return home
	case "XDG_RUNTIME_DIR":
		return "/nonexistent/orion-service-test"
	}
	return ""
}

func noSystemdEnv() service.Env {
	return service.Env{
		Getenv:        func(k string) string { return testEnv(k, "") },
		GOOS:          "linux",
		SystemdBooted: func() bool { return false },
		PID1:          func() string { return "bash" },
		Executable:    func() (string, error) { return "/usr/bin/oriond", nil },
		Run: func(name string, args ...string) (string, error) {
			return "", errors.New("no systemctl in this test")
		},
	}
}

func TestWithoutSystemd(t *testing.T) {
	env := noSystemdEnv()
	for _, args := range [][]string{{"install"}, {"status"}, {"start"}, {"stop"}, {"restart"}, {"uninstall"}, {"status", "--system"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, err := runService(t, env, args...)
			if err == nil || !errors.Is(err, service.ErrNoServiceManager) || !strings.Contains(err.Error(), "does not run systemd") ||
				!strings.Contains(err.Error(), `PID 1 is "bash"`) {
				t.Fatalf("err %v; want one saying this machine does not run systemd", err)
			}
		})
	}
	// --print needs no service manager.
	out, err := runService(t, env, "install", "--print")
	if err != nil || !strings.Contains(out, "ExecStart=/usr/bin/oriond run\n") {
		t.Fatalf("install --print: %v\n%s", err, out)
	}
	env.GOOS = "plan9"
	if _, err := runService(t, env, "status"); err == nil || !strings.Contains(err.Error(), "not on plan9") {
		t.Fatalf("status on plan9: %v", err)
	}
}

// TestServiceBinaryWithoutSystemd runs the real oriond on this machine,
// when it has no systemd: install then status must say so and exit
// non-zero.
func TestServiceBinaryWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("this machine runs systemd; TestWithoutSystemd covers the case in-process")
	}
	bin := testdaemon.Binary(t)
	home := t.TempDir()
	for _, args := range [][]string{{"service", "install"}, {"service", "status"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("oriond %s: %v, want exit 1\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(string(out), "does not run systemd") || !strings.Contains(string(out), "oriond run") {
			t.Fatalf("oriond %s says:\n%s\nwant a clear word that there is no systemd, and what to do", strings.Join(args, " "), out)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".config/systemd/user")); len(entries) != 0 {
		t.Fatalf("install left %v behind", entries)
	}
}

// fakeSystemctl installs a systemctl that logs its arguments and answers
// is-active from a state file per unit, and returns the log's path and a
// setter of a unit's state.
func fakeSystemctl(t *testing.T) (logPath string, setState func(unit, state string)) {
	t.Helper()
	dir := t.TempDir()
	logPath = filepath.Join(dir, "log")
	state := filepath.Join(dir, "state-")
	script := `#!/bin/sh
echo "$*" >> "` + logPath + `"
case "$1" in
is-system-running) echo running ;;
is-active) s=$(cat "` + state + `$2" 2>/dev/null || echo inactive); echo "$s"; [ "$s" = active ] ;;
list-unit-files) [ -f "$HOME/.config/systemd/user/$4" ] && echo "$4 enabled enabled" ;;
esac
exit 0
`
	if err := os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return logPath, func(unit, s string) { os.WriteFile(state+unit, []byte(s), 0o644) }
}

func TestUserServiceLifecycle(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // kardianos finds the user unit directory by it
	logPath, setState := fakeSystemctl(t)
	env := service.RealEnv(func(k string) string {
		return testEnv(k, home)
	})
	env.GOOS = "linux"
	env.SystemdBooted = func() bool { return true }
	env.Executable = func() (string, error) { return "/opt/orion/oriond", nil }
	unit := filepath.Join(home, ".config/systemd/user/oriond.service")
	step := stepper(t, env)
	step(service.ExitNotInstalled, "not installed", "status")
	step(service.ExitNotInstalled, "not installed", "start")
	step(0, "installed "+unit, "install", "--", "--log-level", "debug")
	got, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := service.Render(service.Systemd, service.Spec{Exec: []string{"/opt/orion/oriond", "run", "--log-level=debug"}})
	if string(got) != want {
		t.Fatalf("installed unit:\n%s\nwant:\n%s", got, want)
	}
	step(1, "already exists", "install")
	step(service.ExitNotRunning, "not running", "status")
	step(0, "start done", "start")
	setState("oriond.service", "active")
	step(0, "running", "status")
	step(0, "restart done", "restart")
	step(0, "stop done", "stop")
	setState("oriond.service", "inactive")
	step(service.ExitNotRunning, "installed ("+unit+") but not running", "status")
	setState("oriond.service", "failed")
	step(service.ExitNotRunning, "failed state", "status")
	step(0, "uninstall done", "uninstall")
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("uninstall left %s: %v", unit, err)
	}
	setState("oriond.service", "inactive")
	step(service.ExitNotInstalled, "not installed", "status")

	log, _ := os.ReadFile(logPath)
	for _, want := range []string{"enable --user oriond.service", "daemon-reload --user", "start --user oriond.service",
		"restart --user oriond.service", "stop --user oriond.service", "disable --user oriond.service", "is-active oriond.service --user"} {
		if !strings.Contains(string(log), want+"\n") {
			t.Errorf("systemctl was not called with %q; calls:\n%s", want, log)
		}
	}
	if strings.Contains(string(log), "--system") {
		t.Errorf("a user service touched the system manager:\n%s", log)
	}
}

// stepper returns a function that runs `oriond service ARGS...` and checks
// its exit status and that its output mentions wantOut.
func stepper(t *testing.T, env service.Env) func(wantExit int, wantOut string, args ...string) {
	return func(wantExit int, wantOut string, args ...string) {
		t.Helper()
		out, err := runService(t, env, args...)
		code := 0
		var ee service.ExitError
		switch {
		case errors.As(err, &ee):
			code, out = ee.Code, out+ee.Msg
		case err != nil:
			code, out = 1, out+err.Error()
		}
		if code != wantExit || !strings.Contains(out, wantOut) {
			t.Fatalf("oriond service %s: exit %d, output %q; want exit %d mentioning %q", strings.Join(args, " "), code, out, wantExit, wantOut)
		}
	}
}

func TestSystemServiceNeedsRootAndAccount(t *testing.T) {
	env := noSystemdEnv()
	env.SystemdBooted = func() bool { return true }
	env.EUID = 1000
	if _, err := runService(t, env, "install", "--system", "--run-as", "alice"); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("err %v", err)
	}
	env.EUID = 0
	if _, err := runService(t, env, "install", "--system"); err == nil || !strings.Contains(err.Error(), "--run-as") {
		t.Fatalf("err %v", err)
	}
	env.Executable = func() (string, error) { return "/tmp/go-build123/b001/exe/oriond", nil }
	if _, err := runService(t, env, "install"); err == nil || !strings.Contains(err.Error(), "go run") {
		t.Fatalf("err %v", err)
	}
}

func TestUserManagerUnreachable(t *testing.T) {
	env := noSystemdEnv()
	env.SystemdBooted = func() bool { return true }
	env.Run = func(name string, args ...string) (string, error) {
		return "Failed to connect to bus: No medium found\n", errors.New("exit status 1")
	}
	_, err := runService(t, env, "status")
	if err == nil || !strings.Contains(err.Error(), "user manager") || !strings.Contains(err.Error(), "enable-linger") {
		t.Fatalf("err %v", err)
	}
}

// The unit carries the settings this oriond was given by flags or by the
// environment (the service manager passes on neither): the --allow-root
// the quick start needed, ORION_ALLOW_ROOTS, a changed idle period. The
// config file's settings stay in the file, which the service reads, and a
// password never goes into the unit.
func TestInstallCarriesTheConfiguration(t *testing.T) {
	home := t.TempDir()
	conf := writeConfig(t, "max-attempts = 5\n")
	vars := map[string]string{"HOME": home, "XDG_RUNTIME_DIR": testEnv("XDG_RUNTIME_DIR", ""), "ORION_CONFIG": conf, "ORION_STATE_DIR": "/srv/orion state",
		"ORION_TRACE_POSTGRES": "postgres://u:hunter2@db/traces"}
	env := noSystemdEnv()
	env.Getenv = func(k string) string { return vars[k] }
	out, err := runService(t, env, "install", "--print", "--allow-root", "/work/demo", "--idle", "5s", "--", "--log-level", "debug")
	if err != nil {
		t.Fatalf("install --print: %v\n%s", err, out)
	}
	want := `ExecStart=/usr/bin/oriond run --config ` + conf + ` "--state-dir=/srv/orion state" --allow-root=/work/demo --idle=5s --log-level=debug` + "\n"
	if !strings.Contains(out, want) {
		t.Fatalf("want %q in\n%s", want, out)
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, "max-attempts") {
		t.Fatalf("the unit carries the password or a config file setting:\n%s", out)
	}
	if !strings.Contains(out, "trace-postgres is not written into the unit") {
		t.Fatalf("no word that trace-postgres was left out:\n%s", out)
	}

	// launchd takes the same arguments, one per string.
	vars = map[string]string{"HOME": home, "XDG_RUNTIME_DIR": testEnv("XDG_RUNTIME_DIR", ""), "ORION_CONFIG": os.DevNull, "ORION_ALLOW_ROOTS": "/a:/b"}
	out, err = runService(t, env, "install", "--print", "--platform", "launchd")
	if err != nil || !strings.Contains(out, "<string>--allow-root=/a</string>\n\t\t<string>--allow-root=/b</string>\n") {
		t.Fatalf("launchd: %v\n%s", err, out)
	}

	// A flag oriond run does not have is refused, not written.
	out, err = runService(t, env, "install", "--print", "--", "--allow-rooot", "/x")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "allow-rooot") {
		t.Fatalf("an unknown run flag: %v\n%s", err, out)
	}
}

// A daemon started by hand with --allow-root (as the quick start does)
// and then installed as a service: the unit carries the roots, state
// directory and limits that daemon runs with, wherever the person gave
// none of their own.
func TestInstallCarriesTheRunningDaemonsConfiguration(t *testing.T) {
	d := testdaemon.Start(t, "--max-chunk-bytes", "65536")
	vars := map[string]string{"HOME": t.TempDir(), "ORION_CONFIG": os.DevNull, "ORION_SOCKET": d.Socket}
	env := noSystemdEnv()
	env.Getenv = func(k string) string { return vars[k] }
	out, err := runService(t, env, "install", "--print")
	if err != nil {
		t.Fatalf("install --print: %v\n%s", err, out)
	}
	want := "ExecStart=/usr/bin/oriond run --config /dev/null --socket=" + d.Socket + " --allow-root=" + d.Root +
		" --state-dir=" + d.StateDir + " --max-chunk-bytes=65536\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "the daemon running on "+d.Socket) {
		t.Fatalf("want %q and a note in\n%s", want, out)
	}
	// What the person gives wins over what the running daemon has.
	other := t.TempDir()
	out, err = runService(t, env, "install", "--print", "--allow-root", other, "--max-chunk-bytes", "4096")
	if err != nil {
		t.Fatal(err)
	}
	want = "ExecStart=/usr/bin/oriond run --config /dev/null --socket=" + d.Socket + " --allow-root=" + other + " --max-chunk-bytes=4096 --state-dir=" + d.StateDir + "\n"
	if !strings.Contains(out, want) || strings.Contains(out, d.Root) {
		t.Fatalf("want %q, and not %s, in\n%s", want, d.Root, out)
	}
}

// A root orionctl allow added to the running daemon is read from its state
// directory at every start: the unit does not carry it as a flag, which
// would keep it after the person dropped it from that file.
func TestInstallLeavesOutRootsAllowedWhileRunning(t *testing.T) {
	d := testdaemon.Start(t)
	added := t.TempDir()
	c, err := client.Dial(context.Background(), d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.AllowRoot(context.Background(), added)
	c.Close()
	if err != nil || !res.Added {
		t.Fatalf("allow_root: %+v, %v", res, err)
	}
	vars := map[string]string{"HOME": t.TempDir(), "ORION_CONFIG": os.DevNull, "ORION_SOCKET": d.Socket}
	env := noSystemdEnv()
	env.Getenv = func(k string) string { return vars[k] }
	out, err := runService(t, env, "install", "--print")
	if err != nil {
		t.Fatalf("install --print: %v\n%s", err, out)
	}
	if !strings.Contains(out, "--allow-root="+d.Root) || strings.Contains(out, res.Path) {
		t.Fatalf("want the started root %s and not the added %s in\n%s", d.Root, res.Path, out)
	}
}
