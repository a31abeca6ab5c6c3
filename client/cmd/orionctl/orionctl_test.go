package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// orionctl runs the real command tree in-process with the given stdin.
func orionctl(t *testing.T, socket, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"--socket", socket}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestWriteFromStdin(t *testing.T) {
	d := testdaemon.Start(t)
	target := filepath.Join(d.Root, "doc.md")
	content := strings.Repeat("# Title\n\nSome text with ünïcode.\n", 3000)
	code, out, errOut := orionctl(t, d.Socket, content, "write", target, "--chunk-size", "1000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != content {
		t.Fatalf("file differs from stdin: %d bytes, want %d", len(got), len(content))
	}
	var res protocol.FinalizeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not a finalize result: %v\n%s", err, out)
	}
	if res.Lines != 9000 || res.Bytes != int64(len(content)) || res.EndMarkerSeen {
		t.Fatalf("summary %+v", res)
	}

	// The final newline is matched to the file being replaced, and the
	// repair is reported.
	code, out, errOut = orionctl(t, d.Socket, "no newline", "write", "--op", "overwrite", target)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != "no newline\n" || !strings.Contains(out, "repaired:") {
		t.Fatalf("file %q, output:\n%s", got, out)
	}
}

// TestWriteChunksFitTheDaemon: without --chunk-size, write sends a file on
// stdin in chunks as large as the daemon takes (fewer commits for a large
// file), so a daemon whose chunk limit is below the client's default still
// takes the file.
func TestWriteChunksFitTheDaemon(t *testing.T) {
	d := testdaemon.Start(t, "--max-chunk-bytes", "4096")
	target := filepath.Join(d.Root, "big.txt")
	content := strings.Repeat("a line of text, forty-odd bytes long ü\n", 5000)
	src := filepath.Join(t.TempDir(), "src.txt")
	if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--socket", d.Socket, "write", target, "--json"}, stdin, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if got, err := os.ReadFile(target); err != nil || string(got) != content {
		t.Fatalf("file: %d bytes, %v; want %d bytes", len(got), err, len(content))
	}
	var res protocol.FinalizeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := orionctl(t, d.Socket, "", "sessions", "show", res.SessionID, "--json")
	if code != 0 {
		t.Fatalf("sessions show: exit %d: %s", code, errOut)
	}
	var info protocol.SessionInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("sessions show --json: %v\n%s", err, out)
	}
	if want := uint64((len(content) + 4095) / 4096); info.LastSeq < want-1 || info.LastSeq > want+1 {
		t.Fatalf("%d chunks for %d bytes under a 4096-byte limit, want about %d", info.LastSeq, len(content), want)
	}
}

func TestStepByStep(t *testing.T) {
	d := testdaemon.Start(t)
	target := filepath.Join(d.Root, "steps.txt")
	code, out, errOut := orionctl(t, d.Socket, "", "begin", target, "--json")
	if code != 0 {
		t.Fatalf("begin: exit %d: %s", code, errOut)
	}
	var begun protocol.BeginResult
	if err := json.Unmarshal([]byte(out), &begun); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"part one\n", "part two\n" + begun.EndMarker + "\n"} {
		if code, _, errOut := orionctl(t, d.Socket, part, "append", begun.SessionID); code != 0 {
			t.Fatalf("append: exit %d: %s", code, errOut)
		}
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "list")
	if code != 0 || !strings.Contains(out, begun.SessionID) || !strings.Contains(out, "streaming") {
		t.Fatalf("sessions list: exit %d:\n%s", code, out)
	}
	code, out, _ = orionctl(t, d.Socket, "", "sessions", "show", begun.SessionID)
	if code != 0 || !strings.Contains(out, "2 chunks") || !strings.Contains(out, "seen: true") {
		t.Fatalf("sessions show: exit %d:\n%s", code, out)
	}
	code, out, errOut = orionctl(t, d.Socket, "", "finalize", begun.SessionID)
	if code != 0 || !strings.Contains(out, "2 lines") {
		t.Fatalf("finalize: exit %d: %s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != "part one\npart two\n" {
		t.Fatalf("file %q", got)
	}
}

func TestExitCodes(t *testing.T) {
	d := testdaemon.Start(t)
	existing := filepath.Join(d.Root, "exists.txt")
	os.WriteFile(existing, []byte("x"), 0o644)
	tests := []struct {
		name   string
		socket string
		args   []string
		code   int
		stderr string
	}{
		{"Refused", d.Socket, []string{"write", existing}, exitFailure, "target_exists"},
		{"Usage", d.Socket, []string{"write"}, exitUsage, "missing TARGET"},
		{"BadOp", d.Socket, []string{"write", "--op", "delete", "x"}, exitUsage, "--op"},
		{"Unreachable", filepath.Join(t.TempDir(), "none.sock"), []string{"status"}, exitUnreachable, "not reachable"},
		{"UnknownSession", d.Socket, []string{"sessions", "show", "nope"}, exitFailure, "session_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := orionctl(t, tt.socket, "content", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tt.code, tt.stderr)
			}
		})
	}
}

func TestToolsHasNoContentParameter(t *testing.T) {
	code, out, _ := orionctl(t, "/nonexistent.sock", "", "tools")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var defs []protocol.ToolDefinition
	if err := json.Unmarshal([]byte(out), &defs); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0].Function.Name != "WritePlanTool_begin" || defs[0].Type != "function" {
		t.Fatalf("definitions %+v", defs)
	}
	props := defs[0].Function.Parameters["properties"].(map[string]any)
	for name := range props {
		if strings.Contains(name, "content") {
			t.Fatalf("tool definition has a content parameter %q", name)
		}
	}
	for _, want := range []string{"intent", "target_file", "operation"} {
		if _, ok := props[want]; !ok {
			t.Fatalf("tool definition lacks %q", want)
		}
	}
}

func TestStatus(t *testing.T) {
	d := testdaemon.Start(t)
	code, out, errOut := orionctl(t, d.Socket, "", "status", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st protocol.StatusResult
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Socket != d.Socket || st.StateDir != d.StateDir || len(st.AllowedRoots) != 1 || st.AllowedRoots[0] != d.Root {
		t.Fatalf("status %+v does not describe the daemon we started", st)
	}
}

func TestWriteDryRunAndValidation(t *testing.T) {
	d := testdaemon.Start(t)
	target := filepath.Join(d.Root, "conf.json")
	os.WriteFile(target, []byte("{\"port\": 80}\n"), 0o644)
	code, out, errOut := orionctl(t, d.Socket, "{\"port\": 8080}\n", "write", "--op", "overwrite", "--dry-run", target)
	if code != 0 || !strings.Contains(out, "-{\"port\": 80}") || !strings.Contains(out, "+{\"port\": 8080}") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != "{\"port\": 80}\n" {
		t.Fatalf("dry run wrote %q", got)
	}
	code, _, errOut = orionctl(t, d.Socket, "{\"port\": \n", "write", "--op", "overwrite", target)
	if code != exitFailure || !strings.Contains(errOut, "validation_failed") || !strings.Contains(errOut, "line") {
		t.Fatalf("broken JSON: exit %d, stderr %q", code, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != "{\"port\": 80}\n" {
		t.Fatalf("refused content was written: %q", got)
	}
}

func TestWriteEditFromStdin(t *testing.T) {
	d := testdaemon.Start(t)
	target := filepath.Join(d.Root, "main.go")
	orig := "package main\n\nfunc main() {\n\tprintln(1)\n}\n"
	os.WriteFile(target, []byte(orig), 0o644)
	edit := "<<<<<<< SEARCH\n\tprintln(1)\n=======\n\tprintln(2)\n>>>>>>> REPLACE\n"
	code, out, errOut := orionctl(t, d.Socket, edit, "write", "--op", "edit", "--dry-run", target)
	if code != 0 || !strings.Contains(out, "+\tprintln(2)") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != orig {
		t.Fatalf("dry run changed the file: %q", got)
	}
	if code, _, errOut := orionctl(t, d.Socket, edit, "write", "--op", "edit", target); code != 0 {
		t.Fatalf("edit: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(target); string(got) != strings.Replace(orig, "println(1)", "println(2)", 1) {
		t.Fatalf("file after the edit: %q", got)
	}
}

func TestWriteMultiFileEnvelope(t *testing.T) {
	d := testdaemon.Start(t)
	main := filepath.Join(d.Root, "main.go")
	orig := "package main\n\nfunc main() {\n\tprintln(1)\n}\n"
	os.WriteFile(main, []byte(orig), 0o644)
	os.WriteFile(filepath.Join(d.Root, "old.txt"), []byte("old\n"), 0o644)
	envelope := "*** Begin Patch\n*** Update File: main.go\n@@\n-\tprintln(1)\n+\tprintln(2)\n" +
		"*** Add File: new.txt\n+new\n*** Delete File: old.txt\n*** End Patch\n"
	code, out, errOut := orionctl(t, d.Socket, envelope, "write", "--op", "edit", "--workspace-root", d.Root, main)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"3 files", "update", "add", "delete"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got, _ := os.ReadFile(main); !strings.Contains(string(got), "println(2)") {
		t.Errorf("main.go: %q", got)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "old.txt")); err == nil {
		t.Error("old.txt still there")
	}
}

func TestTxWrite(t *testing.T) {
	d := testdaemon.Start(t)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(src, "b"), []byte("{\"b\": 1}\n"), 0o644)
	os.WriteFile(filepath.Join(src, "bad"), []byte("{\"b\": \n"), 0o644)
	a, b := filepath.Join(d.Root, "a.txt"), filepath.Join(d.Root, "b.json")

	// One file that fails validation keeps the other from being written.
	code, _, errOut := orionctl(t, d.Socket, "", "tx", "write", a+"="+filepath.Join(src, "a"), b+"="+filepath.Join(src, "bad"))
	if code == 0 || !strings.Contains(errOut, "b.json") {
		t.Fatalf("a refused transaction: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(a); err == nil {
		t.Fatal("a.txt was written although b.json was refused")
	}
	code, out, errOut := orionctl(t, d.Socket, "", "tx", "write", a+"="+filepath.Join(src, "a"), b+"="+filepath.Join(src, "b"))
	if code != 0 || !strings.Contains(out, "committed: 2 files") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(b); string(got) != "{\"b\": 1}\n" {
		t.Fatalf("b.json: %q", got)
	}
}
