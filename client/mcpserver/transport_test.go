package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// The server's own transport, under the Go SDK's client on pipes: tool
// calls whose arguments it sets aside (large, escaped, with members
// before and after them, ids of both kinds) reach the tools whole.
func TestTransport(t *testing.T) {
	d := testdaemon.Start(t)
	s, err := mcpserver.New(mcpserver.Options{Socket: d.Socket, WorkspaceRoot: d.Root})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	go s.Run(ctx, s.Transport(toServer, fromServer, 8<<20))
	c := mcp.NewClient(&mcp.Implementation{Name: "pipe-host", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	h := &host{t: t, d: d, client: c, cs: cs}
	content := strings.Repeat("\"quotes\" \\ backslashes \t tabs \u00e9\u4e2d <&> \n", 2000)
	for i, name := range []string{"one.txt", "two.txt"} {
		_, sum := h.ok("write_file", map[string]any{"target_file": name, "operation": "create", "content": content, "intent": strings.Repeat("i", i*100)})
		if sum["lines"] != 2000.0 {
			t.Fatalf("%s: %v", name, sum)
		}
		if got := readFile(t, filepath.Join(d.Root, name)); got != content {
			t.Fatalf("%s differs", name)
		}
	}
	// A call the server refuses, and one with no arguments at all.
	if text, _ := h.fails("write_file", map[string]any{"target_file": "one.txt", "operation": "create", "content": "x"}); !strings.Contains(text, "already exists") {
		t.Errorf("%q", text)
	}
	if text, _ := h.fails("write_abort", nil); !strings.Contains(text, "needs session_id") {
		t.Errorf("%q", text)
	}
	ctx2, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if _, err := cs.ListTools(ctx2, nil); err != nil {
		t.Fatal(err)
	}
}

// orionctl mcp, the real binary, answers what a host piped in before it
// closed stdin (printf ... | orionctl mcp): the SDK writes nothing once told
// the input ended, so the server first answers what it read.
func TestOrionctlMCPAnswersAfterInputEnds(t *testing.T) {
	d := testdaemon.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testdaemon.Orionctl(t), "--socket", d.Socket, "mcp", "--workspace-root", d.Root)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"target_file":"piped.txt","operation":"create","content":"piped in\n"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":"last","method":"tools/list"}` + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("orionctl mcp: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	answered := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		id, _ := json.Marshal(m["id"])
		answered[string(id)] = m
	}
	for _, id := range []string{"0", "1", `"last"`} {
		if answered[id]["result"] == nil {
			t.Errorf("request %s: answered %v", id, answered[id])
		}
	}
	if res, _ := answered["1"]["result"].(map[string]any); res["isError"] == true {
		t.Errorf("the piped write_file failed: %v", res)
	}
	if got := readFile(t, filepath.Join(d.Root, "piped.txt")); got != "piped in\n" {
		t.Errorf("piped.txt: %q", got)
	}
}

// orionctl mcp, the real binary, survives messages over its limit: a
// tool call of 9 MiB and one of 192 MiB are each answered with a tool
// error that tells the model to send the content in chunks, a request of
// another method with a JSON-RPC error, a line that is not JSON with a
// parse error; the next call works, and the server does not hold what it
// skipped: its peak memory after the 192 MiB message stays within 64 MiB
// of its peak after the 9 MiB one. Both read up to the 8 MiB limit before
// skimming, so what differs is the garbage collector's timing (up to 46
// MiB under -race on CI), never the size of the message.
func TestOrionctlMCPSurvivesOversizeMessages(t *testing.T) {
	d := testdaemon.Start(t)
	cmd := exec.Command(testdaemon.Orionctl(t), "--socket", d.Socket, "mcp", "--workspace-root", d.Root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	// answer reads lines until the answer to id, failing on EOF (the
	// server gone).
	answer := func(id string) map[string]any {
		t.Helper()
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				t.Fatalf("no answer to %s: %v; stderr:\n%s", id, err, stderr.String())
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if raw, _ := json.Marshal(m["id"]); string(raw) == id {
				return m
			}
		}
	}
	send := func(parts ...string) {
		t.Helper()
		for _, p := range parts {
			if _, err := io.WriteString(stdin, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	if m := answer("0"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	// bigCall sends a write_file of size MiB as the TypeScript SDK orders
	// its members (id last), written a MiB at a time.
	unit := `a line of a long file, with \"quotes\" and \\ backslashes\n`
	mib := strings.Repeat(unit, (1<<20)/len(unit))
	mib += strings.Repeat("x", 1<<20-len(mib))
	bigCall := func(id string, size int) {
		send(`{"method":"tools/call","params":{"name":"write_file","arguments":{"target_file":"big.txt","operation":"create","content":"`)
		for range size {
			send(mib)
		}
		send(`"}},"jsonrpc":"2.0","id":` + id + "}\n")
	}
	toolError := func(m map[string]any) string {
		t.Helper()
		res, _ := m["result"].(map[string]any)
		if res == nil || res["isError"] != true {
			t.Fatalf("not a tool error: %v", m)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		if sc["error"] != "message_too_large" {
			t.Errorf("reason %v", sc["error"])
		}
		return sc["message"].(string)
	}
	peak := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			return -1
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				return kb << 10
			}
		}
		return -1
	}

	before := peak()
	bigCall("1", 9)
	if msg := toolError(answer("1")); !strings.Contains(msg, "write_begin") || !strings.Contains(msg, "9.0 MiB, over the 8.0 MiB") {
		t.Errorf("the model is not told what to do: %q", msg)
	}
	after9 := peak()
	const hugeMiB = 192
	bigCall(`"big-2"`, hugeMiB)
	toolError(answer(`"big-2"`))
	afterHuge := peak()
	t.Logf("peak memory: %d MiB at start, %d MiB after the 9 MiB call, %d MiB after the %d MiB call", before>>20, after9>>20, afterHuge>>20, hugeMiB)
	if after9 > 0 && afterHuge-after9 > 64<<20 {
		t.Errorf("peak memory grew from %d MiB to %d MiB over a %d MiB message: it was held", after9>>20, afterHuge>>20, hugeMiB)
	}
	// Another method: a JSON-RPC error.
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"`)
	for range 9 {
		send(strings.Repeat("c", 1<<20))
	}
	send(`"}}` + "\n")
	if e, _ := answer("3")["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || !strings.Contains(e["message"].(string), "over the 8.0 MiB") {
		t.Errorf("tools/list over the limit: %v", e)
	}
	// Not JSON at all: a parse error with a null id.
	send("{this is not json\n")
	if e, _ := answer("null")["error"].(map[string]any); e == nil || e["code"] != float64(-32700) {
		t.Errorf("a bad line: %v", e)
	}
	// And the server still serves.
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"target_file":"small.txt","operation":"create","content":"still here\n"}}}` + "\n")
	if res, _ := answer("4")["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Fatalf("the call after: %v", res)
	}
	if got := readFile(t, filepath.Join(d.Root, "small.txt")); got != "still here\n" {
		t.Errorf("small.txt: %q", got)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "big.txt")); !os.IsNotExist(err) {
		t.Errorf("big.txt: %v", err)
	}
}
