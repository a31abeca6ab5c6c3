package mcpserver_test

//lint:file-ignore SA1019 MCP roots are deprecated in the protocol's next version, but hosts send them today and a workspace comes from them; remove with the roots support.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// host is an MCP host in memory: the Go SDK's client connected to a
// Server, which talks to a real oriond.
type host struct {
	t      *testing.T
	d      *testdaemon.Daemon
	client *mcp.Client
	cs     *mcp.ClientSession
	server *mcpserver.Server
}

// newHost starts oriond and a Server, and connects a client offering
// roots (none: a client that does not offer roots at all).
func newHost(t *testing.T, d *testdaemon.Daemon, fallback string, roots ...string) *host {
	t.Helper()
	return newHostWait(t, d, 200*time.Millisecond, fallback, roots...)
}

// newHostWait is newHost whose server waits up to wait for a daemon that
// does not answer.
func newHostWait(t *testing.T, d *testdaemon.Daemon, wait time.Duration, fallback string, roots ...string) *host {
	t.Helper()
	if d == nil {
		d = testdaemon.Start(t)
	}
	return startHost(t, d, mcpserver.Options{Socket: d.Socket, WorkspaceRoot: fallback, RestartWait: wait}, roots...)
}

// newFSHost is a host of a server whose filesystem-compatible tools serve
// dir (also its workspace), with no roots offered.
func newFSHost(t *testing.T, d *testdaemon.Daemon, dir string) *host {
	t.Helper()
	return startHost(t, d, mcpserver.Options{Socket: d.Socket, WorkspaceRoot: dir, FilesystemCompatible: []string{dir}}, nil...)
}

// startHost runs a Server with opts on d and connects a client to it.
func startHost(t *testing.T, d *testdaemon.Daemon, opts mcpserver.Options, roots ...string) *host {
	t.Helper()
	s, err := mcpserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go s.Run(ctx, st)
	copts := &mcp.ClientOptions{}
	if roots == nil {
		copts.Capabilities = &mcp.ClientCapabilities{} // no roots capability
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, copts)
	for _, r := range roots {
		c.AddRoots(&mcp.Root{URI: "file://" + r})
	}
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &host{t: t, d: d, client: c, cs: cs, server: s}
}

// call calls a tool and returns its result, failing the test on a
// protocol error (a tool's own failure is a result with isError).
func (h *host) call(name string, args map[string]any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and returns its text and structured
// content.
func (h *host) ok(name string, args map[string]any) (string, map[string]any) {
	h.t.Helper()
	res := h.call(name, args)
	if res.IsError {
		h.t.Fatalf("%s: isError: %s", name, text(res))
	}
	return text(res), structured(h.t, res)
}

// fails calls a tool that must fail and returns its text and structured
// content.
func (h *host) fails(name string, args map[string]any) (string, map[string]any) {
	h.t.Helper()
	res := h.call(name, args)
	if !res.IsError {
		h.t.Fatalf("%s succeeded, want isError: %s", name, text(res))
	}
	return text(res), structured(h.t, res)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent is not an object: %s", b)
	}
	return m
}

func numbered(n int, tag string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %04d: \"quoted\" \\ backslash\ttab\n", tag, i)
	}
	return b.String()
}

// chunks cuts content after every n-th line.
func chunks(content string, n int) []string {
	lines := strings.SplitAfter(content, "\n")
	var out []string
	for i := 0; i < len(lines); i += n {
		out = append(out, strings.Join(lines[i:min(i+n, len(lines))], ""))
	}
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mkdir(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTools(t *testing.T) {
	h := newHost(t, nil, "")
	res, err := h.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		schemas[tool.Name] = tool.InputSchema.(map[string]any)
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	want := []string{"edit_file", "list_sessions", "undo", "write_abort", "write_append", "write_begin", "write_file", "write_finalize"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if instr := h.cs.InitializeResult().Instructions; !strings.Contains(instr, "write_append") || !strings.Contains(instr, "100 lines") {
		t.Errorf("instructions do not say how to chunk: %q", instr)
	}
	for tool, fields := range map[string][]string{
		"write_begin":    {"target_file", "operation", "intent", "expected_bytes", "expected_lines"},
		"write_append":   {"session_id", "seq", "chunk"},
		"write_finalize": {"session_id", "dry_run"},
		"write_abort":    {"session_id"},
		"write_file":     {"target_file", "operation", "content", "intent"},
		"edit_file":      {"target_file", "edit", "dry_run"},
		"undo":           {"session_id", "last"},
		"list_sessions":  {"limit", "stage"},
	} {
		props := schemas[tool]["properties"].(map[string]any)
		for _, f := range fields {
			if props[f] == nil {
				t.Errorf("%s lacks field %s", tool, f)
			}
		}
	}
}

// A 3,000-line file in 30 chunks lands byte-identical; a chunk sent again
// is acknowledged again, a gap is refused with the seq to send.
func TestChunkedWrite(t *testing.T) {
	h := newHost(t, nil, "")
	ws := mkdir(t, filepath.Join(h.d.Root, "ws"))
	h = newHost(t, h.d, "", ws)
	content := numbered(3000, "big")
	text, begin := h.ok("write_begin", map[string]any{"target_file": "src/big.txt", "operation": "create", "intent": "a big file", "expected_lines": 3000})
	id, _ := begin["session_id"].(string)
	if id == "" || begin["next_seq"] != 1.0 || begin["max_chunk_bytes"].(float64) < 64<<10 || begin["instructions"] == "" {
		t.Fatalf("write_begin: %v", begin)
	}
	if !strings.Contains(text, id) || !strings.Contains(text, "write_append") {
		t.Errorf("write_begin text: %q", text)
	}
	parts := chunks(content, 100)
	if len(parts) != 30 {
		t.Fatalf("%d chunks", len(parts))
	}
	for i, c := range parts {
		seq := i + 1
		_, ack := h.ok("write_append", map[string]any{"session_id": id, "seq": seq, "chunk": c})
		if ack["next_seq"] != float64(seq+1) {
			t.Fatalf("chunk %d: %v", seq, ack)
		}
		if seq == 10 {
			// The host resends chunk 10 (it lost the result): acknowledged
			// again, stored once.
			text, again := h.ok("write_append", map[string]any{"session_id": id, "seq": seq, "chunk": c})
			if again["next_seq"] != 11.0 || !strings.Contains(text, "already stored") {
				t.Fatalf("resent chunk 10: %q %v", text, again)
			}
			// A chunk sent too early is refused with the seq to send.
			text, gap := h.fails("write_append", map[string]any{"session_id": id, "seq": 13, "chunk": "x\n"})
			if gap["error"] != "seq_gap" || gap["next_seq"] != 11.0 || !strings.Contains(text, "send seq 11") {
				t.Fatalf("gap: %q %v", text, gap)
			}
		}
	}
	text, sum := h.ok("write_finalize", map[string]any{"session_id": id})
	target := filepath.Join(ws, "src", "big.txt")
	if got := readFile(t, target); got != content {
		t.Fatalf("the file differs: %d bytes, want %d", len(got), len(content))
	}
	if sum["lines"] != 3000.0 || sum["bytes"] != float64(len(content)) || sum["target_file"] != "src/big.txt" || len(sum["sha256"].(string)) != 64 {
		t.Errorf("summary: %v", sum)
	}
	if dirs, _ := sum["created_dirs"].([]any); len(dirs) != 1 {
		t.Errorf("created_dirs: %v", sum["created_dirs"])
	}
	if !strings.HasPrefix(text, "Wrote src/big.txt (create): 3,000 lines") || !strings.Contains(text, "undo with session_id "+id) {
		t.Errorf("summary text: %q", text)
	}
}

func TestWriteFile(t *testing.T) {
	h := newHost(t, nil, "")
	h = newHost(t, h.d, "", h.d.Root)
	content := numbered(50, "small")
	text, sum := h.ok("write_file", map[string]any{"target_file": "small.txt", "operation": "create", "content": content})
	if got := readFile(t, filepath.Join(h.d.Root, "small.txt")); got != content {
		t.Fatalf("small.txt: %q", got)
	}
	if sum["lines"] != 50.0 || !strings.HasPrefix(text, "Wrote small.txt (create): 50 lines") {
		t.Errorf("%q %v", text, sum)
	}

	t.Run("Exists", func(t *testing.T) {
		text, e := h.fails("write_file", map[string]any{"target_file": "small.txt", "operation": "create", "content": "x\n"})
		if e["error"] != "target_exists" || !strings.Contains(text, "small.txt") {
			t.Errorf("%q %v", text, e)
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		big := strings.Repeat("x", mcpserver.WriteFileMaxBytes+1)
		text, e := h.fails("write_file", map[string]any{"target_file": "big.txt", "operation": "create", "content": big})
		if e["error"] != "invalid_arguments" || !strings.Contains(text, "write_begin") {
			t.Errorf("%q %v", text, e)
		}
		if _, err := os.Stat(filepath.Join(h.d.Root, "big.txt")); !os.IsNotExist(err) {
			t.Errorf("big.txt was written: %v", err)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		// Broken JSON: a strict check refuses it, the model is told why,
		// and the corrected write goes through.
		text, e := h.fails("write_file", map[string]any{"target_file": "conf.json", "operation": "create", "content": "{\"a\": 1,\n"})
		if e["error"] != "validation_failed" || !strings.Contains(text, "nothing was written") || !strings.Contains(text, "Fix the content") {
			t.Errorf("%q %v", text, e)
		}
		h.ok("write_file", map[string]any{"target_file": "conf.json", "operation": "create", "content": "{\"a\": 1}\n"})
		if got := readFile(t, filepath.Join(h.d.Root, "conf.json")); got != "{\"a\": 1}\n" {
			t.Errorf("conf.json: %q", got)
		}
	})
	t.Run("MissingArgument", func(t *testing.T) {
		text, e := h.fails("write_file", map[string]any{"target_file": "a.txt", "operation": "create"})
		if e["error"] != "invalid_arguments" || !strings.Contains(text, "content") {
			t.Errorf("%q %v", text, e)
		}
	})
}

func TestEditUndoList(t *testing.T) {
	h := newHost(t, nil, "")
	h = newHost(t, h.d, "", h.d.Root)
	path := filepath.Join(h.d.Root, "app.py")
	if err := os.WriteFile(path, []byte("def f():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
	text, sum := h.ok("edit_file", map[string]any{"edit": edit})
	if got := readFile(t, path); got != "def f():\n    return 2\n" {
		t.Fatalf("app.py: %q (%s)", got, text)
	}
	id := sum["session_id"].(string)

	_, dry := h.ok("edit_file", map[string]any{"target_file": "app.py", "dry_run": true,
		"edit": "<<<<<<< SEARCH\n    return 2\n=======\n    return 3\n>>>>>>> REPLACE\n"})
	if dry["dry_run"] != true || !strings.Contains(dry["diff"].(string), "+    return 3") {
		t.Errorf("dry run: %v", dry)
	}
	text, e := h.fails("edit_file", map[string]any{"target_file": "app.py", "edit": "<<<<<<< SEARCH\n    return 9\n=======\n    return 3\n>>>>>>> REPLACE\n"})
	if e["error"] != "edit_failed" || !strings.Contains(text, "no_match") {
		t.Errorf("%q %v", text, e)
	}

	text, list := h.ok("list_sessions", map[string]any{"stage": "completed"})
	sessions := list["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["session_id"] != id || !strings.Contains(text, "app.py") {
		t.Errorf("list_sessions: %q %v", text, list)
	}

	text, u := h.ok("undo", map[string]any{"last": true})
	if got := readFile(t, path); got != "def f():\n    return 1\n" || u["session_id"] != id {
		t.Errorf("after undo: %q; %q %v", got, text, u)
	}
	text, e = h.fails("undo", map[string]any{"session_id": id})
	if e["error"] != "nothing_to_undo" {
		t.Errorf("second undo: %q %v", text, e)
	}
}

// Roots: a relative path resolves against the first root; an absolute
// one is written with the root that holds it as its workspace; anything
// else is refused naming the roots; a changed list is honoured.
func TestRoots(t *testing.T) {
	h := newHost(t, nil, "")
	a := mkdir(t, filepath.Join(h.d.Root, "a"))
	b := mkdir(t, filepath.Join(h.d.Root, "b"))
	c := mkdir(t, filepath.Join(h.d.Root, "c"))
	fallback := mkdir(t, filepath.Join(h.d.Root, "fallback"))
	h = newHost(t, h.d, fallback, a, b)

	h.ok("write_file", map[string]any{"target_file": "rel.txt", "operation": "create", "content": "rel\n"})
	readFile(t, filepath.Join(a, "rel.txt"))
	_, sum := h.ok("write_file", map[string]any{"target_file": filepath.Join(b, "abs.txt"), "operation": "create", "content": "abs\n"})
	if sum["target_file"] != "abs.txt" {
		t.Errorf("shown as %v, want relative to root b", sum["target_file"])
	}
	readFile(t, filepath.Join(b, "abs.txt"))
	for _, target := range []string{filepath.Join(c, "out.txt"), "../c/out.txt"} {
		text, e := h.fails("write_file", map[string]any{"target_file": target, "operation": "create", "content": "no\n"})
		if e["error"] != "outside_workspace" || !strings.Contains(text, "outside the workspace") || !strings.Contains(text, a) || !strings.Contains(text, b) {
			t.Errorf("%s: %q %v", target, text, e)
		}
	}
	if _, err := os.Stat(filepath.Join(c, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt written: %v", err)
	}

	// The host changes its roots: roots/list_changed, then c is the root.
	h.client.RemoveRoots("file://"+a, "file://"+b)
	h.client.AddRoots(&mcp.Root{URI: "file://" + c})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := h.call("write_file", map[string]any{"target_file": "new.txt", "operation": "create", "content": "new\n"})
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed roots were not honoured: %s", text(res))
		}
		time.Sleep(20 * time.Millisecond) // the notification is asynchronous
	}
	readFile(t, filepath.Join(c, "new.txt"))

	t.Run("NoRoots", func(t *testing.T) {
		h := newHost(t, h.d, fallback)
		h.ok("write_file", map[string]any{"target_file": "fb.txt", "operation": "create", "content": "fb\n"})
		readFile(t, filepath.Join(fallback, "fb.txt"))
		text, _ := h.fails("write_file", map[string]any{"target_file": filepath.Join(a, "x.txt"), "operation": "create", "content": "x\n"})
		if !strings.Contains(text, fallback) {
			t.Errorf("%q", text)
		}
	})
}

// oriond stopped: a call says what to run; restarted under a chunked
// write, the next chunk continues the session.
func TestDaemonDownAndRestart(t *testing.T) {
	h := newHost(t, nil, "")
	h = newHost(t, h.d, "", h.d.Root)
	content := numbered(300, "restart")
	parts := chunks(content, 100)
	_, begin := h.ok("write_begin", map[string]any{"target_file": "r.txt", "operation": "create"})
	id := begin["session_id"].(string)
	h.ok("write_append", map[string]any{"session_id": id, "seq": 1, "chunk": parts[0]})

	h.d.Kill()
	text, e := h.fails("write_append", map[string]any{"session_id": id, "seq": 2, "chunk": parts[1]})
	if e["error"] != "daemon_not_running" || !strings.Contains(text, "oriond run") || !strings.Contains(text, "send the same call again") {
		t.Fatalf("%q %v", text, e)
	}
	h.d.Restart()
	h.ok("write_append", map[string]any{"session_id": id, "seq": 2, "chunk": parts[1]})
	// The host resends a chunk it is unsure of: acknowledged, not doubled.
	h.ok("write_append", map[string]any{"session_id": id, "seq": 2, "chunk": parts[1]})

	// Killed again between two chunks: the next call reconnects by itself.
	h.d.Kill()
	h.d.Restart()
	_, ack := h.ok("write_append", map[string]any{"session_id": id, "seq": 3, "chunk": parts[2]})
	if ack["next_seq"] != 4.0 || ack["lines"] != 300.0 {
		t.Errorf("after restart: %v", ack)
	}
	h.ok("write_finalize", map[string]any{"session_id": id})
	if got := readFile(t, filepath.Join(h.d.Root, "r.txt")); got != content {
		t.Fatalf("r.txt: %d bytes, want %d", len(got), len(content))
	}
}

func TestAbort(t *testing.T) {
	h := newHost(t, nil, "")
	h = newHost(t, h.d, "", h.d.Root)
	_, begin := h.ok("write_begin", map[string]any{"target_file": "gone.txt", "operation": "create"})
	id := begin["session_id"].(string)
	h.ok("write_append", map[string]any{"session_id": id, "seq": 1, "chunk": "x\n"})
	_, out := h.ok("write_abort", map[string]any{"session_id": id})
	if out["stage"] != "aborted" {
		t.Errorf("%v", out)
	}
	text, e := h.fails("write_finalize", map[string]any{"session_id": id})
	if e["error"] != "session_closed" || !strings.Contains(text, "begin a new session") {
		t.Errorf("%q %v", text, e)
	}
	if _, err := os.Stat(filepath.Join(h.d.Root, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt: %v", err)
	}
}

// oriond dies inside write_file's session.write, after journaling it and
// before its rename, and is restarted: recovery writes the file, and the
// server, whose connection broke before the reply, finds that write
// instead of sending it again (a create sent again would be refused as
// target_exists by its own first attempt).
func TestWriteFileDaemonDiesMidWrite(t *testing.T) {
	d := testdaemon.Start(t)
	d.Stop()
	d.Env = []string{failpoint.EnvVar + "=atomicfile.before-rename=1"}
	d.Restart()
	h := newHostWait(t, d, 20*time.Second, "", d.Root)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		d.Wait()
		d.Env = nil
		d.Restart()
	}()
	content := numbered(200, "mid")
	text, sum := h.ok("write_file", map[string]any{"target_file": "mid.txt", "operation": "create", "content": content})
	<-restarted
	if got := readFile(t, filepath.Join(d.Root, "mid.txt")); got != content {
		t.Fatalf("mid.txt: %d bytes, want %d", len(got), len(content))
	}
	if sum["lines"] != 200.0 || !strings.HasPrefix(text, "Wrote mid.txt (create)") {
		t.Errorf("%q %v", text, sum)
	}
}

// Malformed arguments are a tool error naming the field.
func TestBadArguments(t *testing.T) {
	h := newHost(t, nil, "")
	text, e := h.fails("write_append", map[string]any{"session_id": "x", "seq": "one", "chunk": "a\n"})
	if e["error"] != "invalid_arguments" || !strings.Contains(text, "seq must be a whole number") {
		t.Errorf("%q %v", text, e)
	}
	text, e = h.fails("write_file", map[string]any{"target_file": 7, "operation": "create", "content": "a\n"})
	if e["error"] != "invalid_arguments" || !strings.Contains(text, "target_file must be a string") {
		t.Errorf("%q %v", text, e)
	}
}

// TestExpectedSHA256: write_file, edit_file and write_begin refuse a
// change based on content the file no longer holds, before writing, and
// each result gives the hash the next change is based on.
func TestExpectedSHA256(t *testing.T) {
	h := newHost(t, nil, "")
	h = newHost(t, h.d, "", h.d.Root)
	path := filepath.Join(h.d.Root, "based.txt")
	_, sum := h.ok("write_file", map[string]any{"target_file": "based.txt", "operation": "create", "content": "one\n", "expected_sha256": "absent"})
	first, _ := sum["file_sha256"].(string)
	if len(first) != 64 {
		t.Fatalf("write_file result has no file_sha256: %v", sum)
	}
	if err := os.WriteFile(path, []byte("the person's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"target_file": "based.txt", "operation": "overwrite", "content": "two\n", "expected_sha256": first}},
		{"edit_file", map[string]any{"target_file": "based.txt", "expected_sha256": first, "edit": "<<<<<<< SEARCH\nthe person's\n=======\ntwo\n>>>>>>> REPLACE\n"}},
		{"write_begin", map[string]any{"target_file": "based.txt", "operation": "overwrite", "expected_sha256": first}},
	} {
		text, e := h.fails(call.tool, call.args)
		if e["error"] != "target_changed" || !strings.Contains(text, first) {
			t.Errorf("%s with a stale hash: %q %v", call.tool, text, e)
		}
		if got := readFile(t, path); got != "the person's\n" {
			t.Fatalf("%s with a stale hash wrote %q", call.tool, got)
		}
	}
	_, b := h.ok("write_begin", map[string]any{"target_file": "based.txt", "operation": "overwrite"})
	if b["sha256"] == nil || len(b["sha256"].(string)) != 64 || b["sha256"] == first {
		t.Errorf("write_begin result sha256: %v", b)
	}
	h.ok("write_abort", map[string]any{"session_id": b["session_id"]})
}
