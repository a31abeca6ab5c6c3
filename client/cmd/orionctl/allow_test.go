package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// A directory allowed while oriond runs takes writes at once, is still
// allowed after a restart, and is listed by oriond config print.
func TestAllowWhileRunningSurvivesRestart(t *testing.T) {
	d := testdaemon.Start(t)
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(other, "notes.md")
	if code, _, errOut := orionctl(t, d.Socket, "x\n", "write", target); code != exitFailure || !strings.Contains(errOut, "orionctl allow "+other) {
		t.Fatalf("before allow: exit %d, %s; want a refusal naming `orionctl allow %s`", code, errOut, other)
	}
	code, out, errOut := orionctl(t, d.Socket, "", "allow", other)
	if code != 0 || !strings.Contains(out, "allowed "+other) {
		t.Fatalf("allow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := orionctl(t, d.Socket, "one\n", "write", target); code != 0 {
		t.Fatalf("write after allow: exit %d: %s", code, errOut)
	}
	if code, out, _ := orionctl(t, d.Socket, "", "allow", other); code != 0 || !strings.Contains(out, "allowed already") {
		t.Errorf("allowing it again: exit %d, %q; want it reported as allowed already", code, out)
	}

	d.Stop()
	d.Restart()
	if code, _, errOut := orionctl(t, d.Socket, "two\n", "write", "--op", "overwrite", target); code != 0 {
		t.Fatalf("write after a restart: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(target); string(b) != "two\n" {
		t.Errorf("%s holds %q, want \"two\\n\"", target, b)
	}

	cmd := exec.Command(testdaemon.Binary(t), "config", "print", "--state-dir", d.StateDir)
	cmd.Env = append(os.Environ(), "ORION_CONFIG=/dev/null", "ORION_STATE_DIR=", "ORION_ALLOW_ROOTS=")
	printed, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("oriond config print: %v\n%s", err, printed)
	}
	if !strings.Contains(string(printed), "orionctl allow") || !strings.Contains(string(printed), "#   "+other+"\n") {
		t.Errorf("oriond config print does not list %s as allowed while running:\n%s", other, printed)
	}
}

// What may not be a root is refused, with the reason, and changes nothing.
func TestAllowRefuses(t *testing.T) {
	d := testdaemon.Start(t)
	gitDir := filepath.Join(d.Root, "repo", ".git")
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(d.Root, "file.txt")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"Root", "/", "the whole file system"},
		{"Protected", gitDir, "--allow-protected " + gitDir},
		{"StateDir", d.StateDir, "oriond's own files"},
		{"Missing", filepath.Join(d.Root, "missing"), "no such file or directory"},
		{"File", file, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := orionctl(t, d.Socket, "", "allow", tc.dir)
			if code != exitFailure || !strings.Contains(errOut, tc.want) {
				t.Errorf("allow %s: exit %d, %q; want exit 1 mentioning %q", tc.dir, code, errOut, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(d.StateDir, "allowed-roots.toml")); err == nil {
		t.Error("a refused allow kept a root")
	}
}

// exec refuses a workspace oriond may not write before it starts the
// agent, with the command that allows it; once allowed, the agent runs.
func TestExecRefusesWorkspaceBeforeStarting(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	execIn := func() (string, error) {
		cmd := exec.Command(bin, "--socket", d.Socket, "exec", "--", "sh", "-c", "echo started > started")
		cmd.Dir = ws
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		return errb.String(), err
	}
	stderr, err := execIn()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure || !strings.Contains(stderr, "orionctl allow "+ws) {
		t.Fatalf("exec outside the roots: %v, stderr %q; want exit 1 naming `orionctl allow %s`", err, stderr, ws)
	}
	if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
		t.Fatal("the agent was started in a workspace oriond refuses")
	}
	if code, _, errOut := orionctl(t, d.Socket, "", "allow", ws); code != 0 {
		t.Fatalf("allow: exit %d: %s", code, errOut)
	}
	if stderr, err := execIn(); err != nil {
		t.Fatalf("exec once allowed: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "started")); err != nil {
		t.Errorf("the agent did not run once the workspace was allowed: %v", err)
	}
}
