package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// checkUnitSyntax fails unless text is a systemd unit: sections and
// Key=Value lines, comments, blanks.
func checkUnitSyntax(t *testing.T, text string) map[string]map[string][]string {
	t.Helper()
	units := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if section != "Unit" && section != "Service" && section != "Install" {
				t.Fatalf("line %d: unknown section %q", n, section)
			}
			units[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || !regexp.MustCompile(`^[A-Z][A-Za-z]+$`).MatchString(k) {
				t.Fatalf("line %d is not Key=Value in a section: %q", n, line)
			}
			units[section][k] = append(units[section][k], v)
		}
	}
	return units
}

func TestSystemdUnits(t *testing.T) {
	tests := []struct {
		name   string
		spec   installSpec
		golden string
		check  func(t *testing.T, u map[string]map[string][]string)
	}{
		{"User", installSpec{Exec: []string{"/usr/bin/oriond", "run"}},
			// The packaged unit is exactly what install writes for
			// /usr/bin/oriond.
			"../../../packaging/systemd/oriond.service",
			func(t *testing.T, u map[string]map[string][]string) {
				if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "default.target" {
					t.Fatalf("WantedBy=%v: a user manager has only default.target", got)
				}
				if _, ok := u["Service"]["User"]; ok {
					t.Fatal("a user unit with User=")
				}
			}},
		{"System", installSpec{Exec: []string{"/usr/bin/oriond", "run", "--socket", systemSocket}, System: true, RunAs: "alice"},
			"testdata/service/oriond.system.service",
			func(t *testing.T, u map[string]map[string][]string) {
				if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
					t.Fatalf("WantedBy=%v", got)
				}
				if got := u["Service"]["User"]; len(got) != 1 || got[0] != "alice" {
					t.Fatalf("User=%v", got)
				}
				if got := u["Service"]["RuntimeDirectory"]; len(got) != 1 || got[0] != "oriond" {
					t.Fatalf("RuntimeDirectory=%v", got)
				}
			}},
		{"Quoting", installSpec{Exec: []string{"/opt/my apps/oriond", "run", "--allow-root", `/srv/a "b"\c`, "--state-dir", "/x/100%/$HOME"}},
			"testdata/service/oriond.quoted.service",
			func(t *testing.T, u map[string]map[string][]string) {
				want := `"/opt/my apps/oriond" run --allow-root "/srv/a \"b\"\\c" --state-dir /x/100%%/$$HOME`
				if got := u["Service"]["ExecStart"]; len(got) != 1 || got[0] != want {
					t.Fatalf("ExecStart=%v\nwant       %s", got, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := render(platformSystemd, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			u := checkUnitSyntax(t, text)
			for _, k := range []string{"ExecStart", "Restart", "Type"} {
				if len(u["Service"][k]) != 1 {
					t.Fatalf("%s=%v", k, u["Service"][k])
				}
			}
			if u["Service"]["Restart"][0] != "on-failure" {
				t.Fatalf("Restart=%s", u["Service"]["Restart"][0])
			}
			tt.check(t, u)
			golden(t, tt.golden, text)
			verifyUnit(t, tt.spec)
		})
	}
}

// verifyUnit has systemd itself check the unit for spec, where
// systemd-analyze is installed (it works without systemd running). The
// executable is replaced by a real one under a directory with a space in
// its name, so systemd also checks our quoting.
func verifyUnit(t *testing.T, spec installSpec) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze; the unit is checked by syntax only")
		return
	}
	dir := t.TempDir()
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "my apps", "oriond")
	os.Mkdir(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	spec.Exec = append([]string{bin}, spec.Exec[1:]...)
	if spec.System {
		spec.RunAs = "root"
	}
	text, err := render(platformSystemd, spec)
	if err != nil {
		t.Fatal(err)
	}
	verifyUnitText(t, sa, dir, "oriond.service", text, spec.System)
}

// verifyUnitText has systemd-analyze (at sa) check a unit's text, written
// as name in dir.
func verifyUnitText(t *testing.T, sa, dir, name, text string, system bool) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"verify", "--man=no"}
	if !system {
		args = append(args, "--user")
	}
	cmd := exec.Command(sa, append(args, path)...)
	runtimeDir := filepath.Join(dir, "run")
	os.Mkdir(runtimeDir, 0o700)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze %s: %v\n%s\n%s", strings.Join(args, " "), err, out, text)
	}
}

func TestUnitRefusals(t *testing.T) {
	for _, args := range [][]string{{"/usr/bin/oriond", "run\n[Service]"}, {"/usr/bin/oriond", "{{Path}}"}} {
		if _, err := render(platformSystemd, installSpec{Exec: args}); err == nil {
			t.Fatalf("rendered a unit for %q", args)
		}
	}
}

func TestLaunchdPlists(t *testing.T) {
	tests := []struct {
		name   string
		spec   installSpec
		golden string
	}{
		{"Agent", installSpec{Exec: []string{"/usr/local/bin/oriond", "run"}, Home: "/Users/YOU"},
			"../../../packaging/launchd/" + launchdLabel + ".plist"},
		{"Daemon", installSpec{Exec: []string{"/usr/local/bin/oriond", "run", "--socket", "/tmp/oriond-alice/oriond.sock", "--allow-root", "/a&b<c>"}, System: true, RunAs: "alice"},
			"testdata/service/" + launchdLabel + ".system.plist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := render(platformLaunchd, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			// Well-formed, and the program arguments come back intact.
			var plist struct {
				Dict struct {
					Inner []byte `xml:",innerxml"`
				} `xml:"dict"`
			}
			if err := xml.Unmarshal([]byte(text), &plist); err != nil {
				t.Fatalf("not XML: %v", err)
			}
			var args []string
			dec := xml.NewDecoder(strings.NewReader(text))
			inArray := false
			for {
				tok, err := dec.Token()
				if err != nil {
					break
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					if tok.Name.Local == "array" {
						inArray = true
					} else if inArray && tok.Name.Local == "string" {
						var s string
						dec.DecodeElement(&s, &tok)
						args = append(args, s)
					}
				case xml.EndElement:
					if tok.Name.Local == "array" {
						inArray = false
					}
				}
			}
			if strings.Join(args, "\x00") != strings.Join(tt.spec.Exec, "\x00") {
				t.Fatalf("ProgramArguments %q, want %q", args, tt.spec.Exec)
			}
			golden(t, tt.golden, text)
		})
	}
}

// runService runs `oriond service ...` in-process with env.
func runService(t *testing.T, env serviceEnv, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd(env.getenv)
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

func noSystemdEnv() serviceEnv {
	return serviceEnv{
		getenv:        func(string) string { return "" },
		goos:          "linux",
		systemdBooted: func() bool { return false },
		pid1:          func() string { return "bash" },
		executable:    func() (string, error) { return "/usr/bin/oriond", nil },
		run: func(name string, args ...string) (string, error) {
			return "", errors.New("no systemctl in this test")
		},
	}
}

func TestWithoutSystemd(t *testing.T) {
	env := noSystemdEnv()
	for _, args := range [][]string{{"install"}, {"status"}, {"start"}, {"stop"}, {"restart"}, {"uninstall"}, {"status", "--system"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, err := runService(t, env, args...)
			if err == nil || !errors.Is(err, errNoServiceManager) || !strings.Contains(err.Error(), "does not run systemd") ||
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
	env.goos = "plan9"
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
	env := realServiceEnv(func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})
	env.goos = "linux"
	env.systemdBooted = func() bool { return true }
	env.executable = func() (string, error) { return "/opt/orion/oriond", nil }
	unit := filepath.Join(home, ".config/systemd/user/oriond.service")
	step := stepper(t, env)
	step(exitNotInstalled, "not installed", "status")
	step(exitNotInstalled, "not installed", "start")
	step(0, "installed "+unit, "install", "--", "--log-level", "debug")
	got, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := render(platformSystemd, installSpec{Exec: []string{"/opt/orion/oriond", "run", "--log-level", "debug"}})
	if string(got) != want {
		t.Fatalf("installed unit:\n%s\nwant:\n%s", got, want)
	}
	step(1, "already exists", "install")
	step(exitNotRunning, "not running", "status")
	step(0, "start done", "start")
	setState("oriond.service", "active")
	step(0, "running", "status")
	step(0, "restart done", "restart")
	step(0, "stop done", "stop")
	setState("oriond.service", "inactive")
	step(exitNotRunning, "installed ("+unit+") but not running", "status")
	setState("oriond.service", "failed")
	step(exitNotRunning, "failed state", "status")
	step(0, "uninstall done", "uninstall")
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("uninstall left %s: %v", unit, err)
	}
	setState("oriond.service", "inactive")
	step(exitNotInstalled, "not installed", "status")

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
func stepper(t *testing.T, env serviceEnv) func(wantExit int, wantOut string, args ...string) {
	return func(wantExit int, wantOut string, args ...string) {
		t.Helper()
		out, err := runService(t, env, args...)
		code := 0
		var ee exitError
		switch {
		case errors.As(err, &ee):
			code, out = ee.code, out+ee.msg
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
	env.systemdBooted = func() bool { return true }
	env.euid = 1000
	if _, err := runService(t, env, "install", "--system", "--run-as", "alice"); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("err %v", err)
	}
	env.euid = 0
	if _, err := runService(t, env, "install", "--system"); err == nil || !strings.Contains(err.Error(), "--run-as") {
		t.Fatalf("err %v", err)
	}
	env.executable = func() (string, error) { return "/tmp/go-build123/b001/exe/oriond", nil }
	if _, err := runService(t, env, "install"); err == nil || !strings.Contains(err.Error(), "go run") {
		t.Fatalf("err %v", err)
	}
}

func TestUserManagerUnreachable(t *testing.T) {
	env := noSystemdEnv()
	env.systemdBooted = func() bool { return true }
	env.run = func(name string, args ...string) (string, error) {
		return "Failed to connect to bus: No medium found\n", errors.New("exit status 1")
	}
	_, err := runService(t, env, "status")
	if err == nil || !strings.Contains(err.Error(), "user manager") || !strings.Contains(err.Error(), "enable-linger") {
		t.Fatalf("err %v", err)
	}
}

func TestDetectLogTarget(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	st := fi.Sys().(*syscall.Stat_t)
	match := strings.Join([]string{itoa(uint64(st.Dev)), itoa(st.Ino)}, ":")
	tests := []struct {
		name     string
		env      map[string]string
		bySystem bool
		want     logTarget
	}{
		{"Interactive", nil, false, logTarget{}},
		{"Journal", map[string]string{"JOURNAL_STREAM": match, "INVOCATION_ID": "x"}, true, logTarget{Manager: "systemd", Journal: true}},
		{"InheritedJournalStream", map[string]string{"JOURNAL_STREAM": "1:2"}, false, logTarget{}},
		{"SystemdToAFile", map[string]string{"JOURNAL_STREAM": "1:2", "INVOCATION_ID": "x"}, true, logTarget{Manager: "systemd"}},
		{"ChildOfAService", map[string]string{"INVOCATION_ID": "x"}, false, logTarget{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := detectLogTargetWith(func(k string) string { return tt.env[k] }, f, func() bool { return tt.bySystem })
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestJournalLogs(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			h, err := newLogHandler(&buf, format, slog.LevelDebug, logTarget{Manager: "systemd", Journal: true})
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(h).With("k", "v")
			log.Debug("d")
			log.Info("i", "multi", "line\nbreak")
			log.WithGroup("g").Warn("w", "time", "kept in a group")
			log.Error("e")
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != 4 {
				t.Fatalf("%d lines:\n%s", len(lines), buf.String())
			}
			for i, prefix := range []string{"<7>", "<6>", "<4>", "<3>"} {
				line, ok := strings.CutPrefix(lines[i], prefix)
				if !ok {
					t.Fatalf("line %d lacks %s: %q", i, prefix, lines[i])
				}
				if strings.HasPrefix(line, "time=") || strings.Contains(line, `"time":"2`) {
					t.Fatalf("line %d has a timestamp: %q", i, line)
				}
				if format == "json" && !json.Valid([]byte(line)) {
					t.Fatalf("line %d is not JSON after its prefix: %q", i, line)
				}
			}
		})
	}
	// Not under the journal: the usual handler, with time.
	var buf bytes.Buffer
	h, _ := newLogHandler(&buf, "text", slog.LevelInfo, logTarget{})
	slog.New(h).Info("x")
	if !strings.HasPrefix(buf.String(), "time=") {
		t.Fatalf("interactive log line %q lacks its time", buf.String())
	}
	if _, err := newLogHandler(&buf, "xml", slog.LevelInfo, logTarget{}); err == nil {
		t.Fatal("log format xml accepted")
	}
}
