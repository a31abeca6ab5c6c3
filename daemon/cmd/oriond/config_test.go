package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/internal/trace"
)

// printed is one line of `oriond config print`.
type printed struct {
	Value  any
	Source string
}

// configPrint runs `oriond config print` in-process with env and returns
// what it printed, by key.
func configPrint(t *testing.T, env map[string]string, args ...string) (map[string]printed, string, error) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	root := newRootCmd(getenv)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"config", "print"}, args...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		return nil, out.String(), err
	}
	var values map[string]any
	if err := toml.Unmarshal(out.Bytes(), &values); err != nil {
		t.Fatalf("config print is not TOML: %v\n%s", err, out.String())
	}
	got := map[string]printed{}
	for _, line := range strings.Split(out.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, _, _ := strings.Cut(line, " = ")
		i := strings.LastIndex(line, "  # ")
		got[key] = printed{Value: values[key], Source: line[i+4:]}
	}
	return got, out.String(), nil
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conf", "oriond.toml")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigPrecedence(t *testing.T) {
	home := t.TempDir()
	file := writeConfig(t, `
socket = "/from/file.sock"
state-dir = "~/state-from-file"
allow-root = ["relative", "/abs"]
idle = "5s"
max-chunk-bytes = 4096
max-connections = 100
trace = false
log-format = "json"
`)
	dir := filepath.Dir(file)
	t.Setenv("HOME", home) // ~ in the file
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		key   string
		value any
		src   string
	}{
		{"DefaultSocket", map[string]string{"HOME": home, "XDG_RUNTIME_DIR": "/run/user/7"}, nil, "socket", "/run/user/7/orion/oriond.sock", "default"},
		{"DefaultStateDir", map[string]string{"HOME": home}, nil, "state-dir", home + "/.local/state/orion", "default"},
		{"DefaultRoot", map[string]string{"HOME": home}, nil, "allow-root", []any{home}, "default"},
		{"DefaultIdle", map[string]string{"HOME": home}, nil, "idle", "2s", "default"},
		{"File", map[string]string{"HOME": home, "ORION_CONFIG": file}, nil, "socket", "/from/file.sock", "config file"},
		{"FileTilde", map[string]string{"HOME": home, "ORION_CONFIG": file}, nil, "state-dir", home + "/state-from-file", "config file"},
		{"FileRelative", map[string]string{"HOME": home, "ORION_CONFIG": file}, nil, "allow-root", []any{dir + "/relative", "/abs"}, "config file"},
		{"FileInt", map[string]string{"HOME": home, "ORION_CONFIG": file}, nil, "max-chunk-bytes", int64(4096), "config file"},
		{"FileBool", map[string]string{"HOME": home, "ORION_CONFIG": file}, nil, "trace", false, "config file"},
		{"FileMaxConnections", map[string]string{"HOME": home, "ORION_CONFIG": file}, nil, "max-connections", int64(100), "config file"},
		{"DefaultMaxConnections", map[string]string{"HOME": home}, nil, "max-connections", int64(0), "default"},
		{"DefaultMaxInflight", map[string]string{"HOME": home}, nil, "max-inflight", int64(64), "default"},
		{"FlagMaxInflight", map[string]string{"HOME": home}, []string{"--max-inflight", "8"}, "max-inflight", int64(8), "flag"},
		{"EnvOverFile", map[string]string{"HOME": home, "ORION_CONFIG": file, "ORION_SOCKET": "/env.sock"}, nil, "socket", "/env.sock", "environment ($ORION_SOCKET)"},
		{"EnvList", map[string]string{"HOME": home, "ORION_CONFIG": file, "ORION_ALLOW_ROOTS": "/a: /b :"}, nil, "allow-root", []any{"/a", "/b"}, "environment ($ORION_ALLOW_ROOTS)"},
		{"FlagOverEnv", map[string]string{"HOME": home, "ORION_CONFIG": file, "ORION_SOCKET": "/env.sock"}, []string{"--socket", "/flag.sock"}, "socket", "/flag.sock", "flag"},
		{"FlagOverFile", map[string]string{"HOME": home}, []string{"--config", file, "--idle", "7s"}, "idle", "7s", "flag"},
		{"FlagList", map[string]string{"HOME": home, "ORION_CONFIG": file}, []string{"--allow-root", "/x", "--allow-root", "/y"}, "allow-root", []any{"/x", "/y"}, "flag"},
		{"ConfigFlagOverEnv", map[string]string{"HOME": home, "ORION_CONFIG": "/nonexistent.toml"}, []string{"--config", file}, "idle", "5s", "config file"},
		{"XDGConfigHome", map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Dir(dir)}, nil, "idle", "2s", "default"},
		{"DevNull", map[string]string{"HOME": home, "ORION_CONFIG": os.DevNull}, nil, "log-format", "text", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out, err := configPrint(t, tt.env, tt.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			p := got[tt.key]
			gotJSON, _ := json.Marshal(p.Value)
			wantJSON, _ := json.Marshal(tt.value)
			if string(gotJSON) != string(wantJSON) || p.Source != tt.src {
				t.Fatalf("%s = %s (%s), want %s (%s)\n%s", tt.key, gotJSON, p.Source, wantJSON, tt.src, out)
			}
		})
	}
}

func TestConfigFileIsFoundInXDGConfigHome(t *testing.T) {
	file := writeConfig(t, `idle = "9s"`)
	xdg := filepath.Dir(filepath.Dir(file))
	os.Rename(filepath.Dir(file), filepath.Join(xdg, "orion"))
	got, out, err := configPrint(t, map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": xdg})
	if err != nil || got["idle"].Value != "9s" || !strings.Contains(out, "# Config file: "+filepath.Join(xdg, "orion", ConfigFileName)+"\n") {
		t.Fatalf("err %v\n%s", err, out)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"UnknownKey", `sockett = "/x"`, `unknown key "sockett" (did you mean "socket"?)`},
		{"Table", "[limits]\nmax-chunk-bytes = 1", "[limits]: the file has no tables"},
		{"WrongType", `max-chunk-bytes = "1MiB"`, "max-chunk-bytes: want an integer, got a string"},
		{"DurationNumber", `idle = 2`, `idle: want a duration as a string such as "2s"`},
		{"BadDuration", `idle = "2 parsecs"`, `idle: `},
		{"ListOfNumbers", `allow-root = [1]`, "allow-root: an element: want a string, got an integer"},
		{"EmptyList", `allow-root = []`, "allow-root: empty list"},
		{"Syntax", "socket = \n", ":1:"},
		{"NotAFlagOfRun", `config = "/x"`, `unknown key "config"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.file)
			_, out, err := configPrint(t, map[string]string{"HOME": t.TempDir()}, "--config", path)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v, want a usage error naming %s and saying %q\n%s", err, path, tt.want, out)
			}
		})
	}
	t.Run("ExplicitMissing", func(t *testing.T) {
		_, _, err := configPrint(t, map[string]string{"HOME": t.TempDir(), "ORION_CONFIG": "/nonexistent/oriond.toml"})
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/oriond.toml") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("BadEnv", func(t *testing.T) {
		_, _, err := configPrint(t, map[string]string{"HOME": t.TempDir(), "ORION_CONFIG": os.DevNull, "ORION_ALLOW_ROOTS": ":"})
		if err == nil || !strings.Contains(err.Error(), "$ORION_ALLOW_ROOTS") {
			t.Fatalf("err %v", err)
		}
	})
}

// TestConfigPrintRoundTrip: what config print prints, read back as a config
// file, gives the same configuration.
func TestConfigPrintRoundTrip(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "ORION_CONFIG": os.DevNull}
	first, out, err := configPrint(t, env, "--socket", `/tmp/we"ird\path`+"\t.sock", "--allow-root", "/a", "--allow-root", "/b c",
		"--idle", "1m30s", "--trace=false", "--max-attempts", "9")
	if err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, out)
	second, out2, err := configPrint(t, map[string]string{"HOME": home}, "--config", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(second) != len(first) || len(first) < 20 {
		t.Fatalf("%d settings, then %d", len(first), len(second))
	}
	for k, p := range first {
		a, _ := json.Marshal(p.Value)
		b, _ := json.Marshal(second[k].Value)
		if string(a) != string(b) {
			t.Errorf("%s: %s, read back as %s", k, a, b)
		}
		if second[k].Source != "config file" {
			t.Errorf("%s: source %q", k, second[k].Source)
		}
	}
	if t.Failed() {
		t.Logf("first:\n%s\nsecond:\n%s", out, out2)
	}
}

// config print masks the password of trace-postgres (the masking itself:
// internal/config's TestMaskPassword).
func TestConfigPrintMasksPassword(t *testing.T) {
	got, out, err := configPrint(t, map[string]string{"HOME": t.TempDir(), "ORION_CONFIG": os.DevNull,
		"ORION_TRACE_POSTGRES": "postgres://u:hunter2@h/db"})
	if err != nil || strings.Contains(out, "hunter2") || got["trace-postgres"].Source != "environment ($ORION_TRACE_POSTGRES)" {
		t.Fatalf("err %v\n%s", err, out)
	}
}

// TestRunReadsConfigFile starts the real oriond with nothing but a config
// file: it serves on the file's socket, with the file's log format.
func TestRunReadsConfigFile(t *testing.T) {
	bin := testdaemon.Binary(t)
	sockDir, err := paths.SocketTempDir("orion", "s/oriond.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s", "oriond.sock")
	root := t.TempDir()
	path := writeConfig(t, `
socket = "`+sock+`"
state-dir = "state"
allow-root = ["`+root+`"]
log-format = "json"
trace-retention = "1h"
`)
	cmd := exec.Command(bin, "run", "--config", path)
	cmd.Env = append(os.Environ(), "ORION_SOCKET=", "ORION_STATE_DIR=", "ORION_ALLOW_ROOTS=", "ORION_CONFIG=", "JOURNAL_STREAM=", "INVOCATION_ID=")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	waitServing(t, sock, exited, &logs)
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "state", "orion.db")); err != nil {
		t.Fatalf("the store is not in the state-dir relative to the config file: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	exited <- nil
	first, _, _ := strings.Cut(logs.String(), "\n")
	if !json.Valid([]byte(first)) || !strings.Contains(first, `"time"`) {
		t.Fatalf("the first log line is not a timestamped JSON record: %q", first)
	}
}

// TestPackagedExampleConfig: the example shipped in the package is a valid
// config file, every line uncommented.
func TestPackagedExampleConfig(t *testing.T) {
	b, err := os.ReadFile("../../../packaging/oriond.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if k, ok := strings.CutPrefix(l, "#"); ok && strings.Contains(k, " = ") && !strings.HasPrefix(k, " ") {
			l, n = k, n+1
		}
		lines = append(lines, l)
	}
	path := writeConfig(t, strings.Join(lines, "\n"))
	got, out, err := configPrint(t, map[string]string{"HOME": t.TempDir()}, "--config", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	files := 0
	for _, p := range got {
		if p.Source == "config file" {
			files++
		}
	}
	if n < 15 || files != n {
		t.Fatalf("%d example settings, %d read from the file", n, files)
	}
}

// TestTraceMaxBytes: --trace-max-bytes is a setting like the others (flag,
// config file, shown by config print with its default); tracecfg's
// TestMaxBytes checks the values it takes.
func TestTraceMaxBytes(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "ORION_CONFIG": os.DevNull}
	got, out, err := configPrint(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if p := got["trace-max-bytes"]; p.Value != int64(trace.DefaultMaxBytes) || p.Source != "default" {
		t.Fatalf("trace-max-bytes printed as %+v\n%s", p, out)
	}
	path := writeConfig(t, "trace-max-bytes = 1048576\n")
	got, out, err = configPrint(t, map[string]string{"HOME": t.TempDir()}, "--config", path)
	if err != nil || got["trace-max-bytes"].Value != int64(1<<20) || got["trace-max-bytes"].Source != "config file" {
		t.Fatalf("from the config file: %+v %v\n%s", got["trace-max-bytes"], err, out)
	}

}

// Help names the config file that would be read, not a variable that is
// not set.
func TestHelpShowsTheRealConfigPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"NoXDG", map[string]string{"HOME": "/home/me"}, "/home/me/.config/orion/oriond.toml"},
		{"XDG", map[string]string{"HOME": "/home/me", "XDG_CONFIG_HOME": "/cfg"}, "/cfg/orion/oriond.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"config", "--help"}} {
				root := newRootCmd(func(k string) string { return tt.env[k] })
				var out bytes.Buffer
				root.SetOut(&out)
				root.SetArgs(args)
				if err := root.Execute(); err != nil {
					t.Fatal(err)
				}
				help := out.String()
				if !strings.Contains(help, tt.want) {
					t.Errorf("oriond %v does not name %s:\n%s", args, tt.want, help)
				}
				if tt.env["XDG_CONFIG_HOME"] == "" && strings.Contains(help, "(default $XDG_CONFIG_HOME") {
					t.Errorf("oriond %v names $XDG_CONFIG_HOME as the default although it is unset", args)
				}
			}
		})
	}
}

// waitServing waits until an oriond started by the test accepts on sock,
// failing the test with its logs if it exits first or takes over 30 s.
func waitServing(t *testing.T, sock string, exited <-chan error, logs *bytes.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("oriond exited: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("oriond never served on %s\n%s", sock, logs.String())
		}
	}
}
