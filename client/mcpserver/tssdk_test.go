package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/testdaemon"
)

// tsSDK is the official TypeScript SDK release the test installs, pinned.
const tsSDK = "@modelcontextprotocol/sdk@1.32.2"

type tsCall struct {
	IsError    bool           `json:"isError"`
	Text       string         `json:"text"`
	Structured map[string]any `json:"structured"`
}

// The official TypeScript SDK's client, over stdio, against orionctl mcp
// and a real oriond: the tools listed, every tool called once, roots
// honoured (and changed ones).
func TestTypeScriptSDK(t *testing.T) {
	modules := npmPackages(t, tsSDK)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	a := mkdir(t, filepath.Join(d.Root, "a"))
	b := mkdir(t, filepath.Join(d.Root, "b"))
	c := mkdir(t, filepath.Join(d.Root, "c"))
	outside := filepath.Join(d.Root, "outside.txt")
	script, err := filepath.Abs("testdata/tsclient.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// node resolves the SDK from the script's directory upwards: the
	// script runs from a copy inside the installed tree.
	run := filepath.Join(modules, "tsclient.mjs")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", run, bin, d.Socket, a, b, c, outside)
	// The server's workspace fallback (its working directory) is none of
	// the roots, so a write that lands in one proves the roots were used.
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	var out struct {
		Server       struct{ Name, Version string }
		Instructions string
		Tools        []struct {
			Name       string
			Properties []string
		}
		Calls      map[string]tsCall
		RootsAsked int
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	t.Logf("server %s %s; roots/list asked %d times", out.Server.Name, out.Server.Version, out.RootsAsked)

	var names []string
	for _, tool := range out.Tools {
		names = append(names, tool.Name)
		if tool.Name == "write_append" && tool.Properties[len(tool.Properties)-1] != "chunk" {
			t.Errorf("write_append's properties as the TypeScript client sees them: %v, want chunk last", tool.Properties)
		}
	}
	slices.Sort(names)
	if want := []string{"edit_file", "list_sessions", "undo", "write_abort", "write_append", "write_begin", "write_file", "write_finalize"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if !strings.Contains(out.Instructions, "write_begin") {
		t.Errorf("instructions: %q", out.Instructions)
	}
	for label, call := range out.Calls {
		wantErr := label == "outside"
		if call.IsError != wantErr {
			t.Errorf("%s: isError %v: %s", label, call.IsError, call.Text)
		}
		if call.Text == "" || call.Structured == nil {
			t.Errorf("%s: text %q, structured %v", label, call.Text, call.Structured)
		}
	}
	if s := out.Calls["write_finalize"].Structured; s["lines"] != 2.0 || s["target_file"] != "chunked.txt" {
		t.Errorf("write_finalize: %v", s)
	}
	if s := out.Calls["list_sessions"].Structured; len(s["sessions"].([]any)) < 3 {
		t.Errorf("list_sessions: %v", s)
	}
	if e := out.Calls["outside"]; !strings.Contains(e.Text, a) || !strings.Contains(e.Text, b) || e.Structured["error"] != "outside_workspace" {
		t.Errorf("outside: %+v", e)
	}
	// The files: the chunked one (its edit undone), the absolute one in
	// root b, the one after the roots changed in c, nothing outside.
	for path, want := range map[string]string{
		filepath.Join(a, "chunked.txt"): "one\ntwo\n",
		filepath.Join(b, "b.txt"):       "in root b\n",
		filepath.Join(c, "c.txt"):       "in root c\n",
	} {
		if got := readFile(t, path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	for _, path := range []string{outside, filepath.Join(a, "aborted.txt"), filepath.Join(a, "c.txt")} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s exists: %v", path, err)
		}
	}
}
