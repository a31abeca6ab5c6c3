package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/claudecode"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// anthropicStream writes a Messages stream: text blocks and at most one
// tool_use block, then the stop reason.
func anthropicStream(w http.ResponseWriter, stop string, text string, tool, input string) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message",
		"role": "assistant", "model": "claude-fake", "content": []any{}, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	i := 0
	if text != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]string{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "text_delta", "text": text}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	if tool != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": tool, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": input}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]int{"output_tokens": 5}})
	ev("message_stop", map[string]string{"type": "message_stop"})
}

// scriptedModel is an Anthropic upstream that has the model write
// target through WritePlanTool_begin: the call, the content with the end
// marker the tool result gave, and a last word. Side requests (without
// Claude Code's Bash tool) get a short reply.
type scriptedModel struct {
	target, content string
	mu              sync.Mutex
	turns           int
}

var markerRE = regexp.MustCompile(`__END_WRITE_[0-9a-f]+__`)

// checkExecWroteTable checks an exec run whose agent first tried a
// protected path and then wrote content to big.txt in project: the file
// is whole, the agent showed the write, and exec's stderr named the
// refusal.
func checkExecWroteTable(t *testing.T, project, content, stdout, stderr string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(project, "big.txt"))
	if err != nil || string(got) != content {
		t.Errorf("myproject/big.txt: %d bytes, %v; want %d bytes\nstdout %s\nstderr %s", len(got), err, len(content), stdout, stderr)
	}
	if !strings.Contains(stdout, "Wrote big.txt: 3,000 lines") {
		t.Errorf("the agent did not show the written file:\n%s", stdout)
	}
	if !strings.Contains(stderr, "write refused") || !strings.Contains(stderr, "pre-commit") {
		t.Errorf("exec's stderr does not name the refused write:\n%s", stderr)
	}
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		io.WriteString(w, `{"input_tokens":1000}`)
		return
	}
	var req struct{ Tools []struct{ Name string } }
	_ = json.Unmarshal(body, &req)
	if !slices.ContainsFunc(req.Tools, func(t struct{ Name string }) bool { return t.Name == "Bash" }) {
		anthropicStream(w, "end_turn", "Side reply.", "", "")
		return
	}
	m.mu.Lock()
	m.turns++
	turn := m.turns
	m.mu.Unlock()
	switch turn {
	case 1:
		anthropicStream(w, "tool_use", "I'll write it.", "WritePlanTool_begin",
			`{"intent":"notes","target_file":"`+m.target+`","operation":"create"}`)
	case 2:
		anthropicStream(w, "end_turn", m.content+markerRE.FindString(string(body))+"\n", "", "")
	default:
		anthropicStream(w, "end_turn", "Done.", "", "")
	}
}

// orionctl exec -- claude -p, from a project directory: Claude Code,
// given nothing but the base URL exec sets, writes into the directory it
// was started in.
func TestExecClaudeCode(t *testing.T) {
	claude, version := claudecode.Install(t)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	project := filepath.Join(d.Root, "myproject")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "# Notes\n\nwritten through orionctl exec\n"
	up := httptest.NewServer(&scriptedModel{target: "notes.md", content: content})
	defer up.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.Socket, "exec", "--anthropic-upstream", up.URL, "--",
		claude, "-p", "Write notes.md.", "--output-format", "json")
	cmd.Dir = project
	cmd.Env = claudecode.Env(t.TempDir(), "")
	out, errb := agentcli.Run(t, cmd, "orionctl exec -- claude (Claude Code "+version+")")
	var r struct {
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.IsError || !strings.Contains(r.Result, "Wrote notes.md") {
		t.Errorf("Claude Code's result %s (%v)\nstderr %s", out, err, errb)
	}
	got, err := os.ReadFile(filepath.Join(project, "notes.md"))
	if err != nil || string(got) != content {
		t.Errorf("myproject/notes.md: %q, %v; want %q", got, err, content)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "notes.md")); err == nil {
		t.Errorf("notes.md also landed in the root, outside the project")
	}
}

// exec gives CMD the two base URLs (the secret in their path), passes a
// signal on, and exits with CMD's status.
func TestExecEnvSignalsAndStatus(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)

	t.Run("EnvAndStatus", func(t *testing.T) {
		cmd := exec.Command(bin, "--socket", d.Socket, "exec", "--", "sh", "-c", `echo "$ANTHROPIC_BASE_URL"; echo "$OPENAI_BASE_URL"; exit 7`)
		cmd.Dir = d.Root
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
			t.Fatalf("exit %v, want status 7", err)
		}
		lines := strings.Fields(string(out))
		re := regexp.MustCompile(`^http://127\.0\.0\.1:\d+/t/[A-Za-z0-9_-]{32}$`)
		if len(lines) != 2 || !re.MatchString(lines[0]) || lines[1] != lines[0]+"/v1" {
			t.Fatalf("CMD saw base URLs %q, want http://127.0.0.1:PORT/t/SECRET and the same with /v1", lines)
		}
		// The secret is required: without it the proxy refuses.
		if resp, err := http.Get(strings.Replace(lines[0], "/t/", "/t/x", 1) + "/v1/models"); err == nil {
			resp.Body.Close()
			t.Errorf("the proxy still answers after CMD exited: %s", resp.Status)
		}
	})

	t.Run("Signal", func(t *testing.T) {
		cmd := exec.Command(bin, "--socket", d.Socket, "exec", "--", "sh", "-c",
			`trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done`)
		cmd.Dir = d.Root
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || sc.Text() != "ready" {
			t.Fatalf("CMD said %q", sc.Text())
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		var rest []string
		for sc.Scan() {
			rest = append(rest, sc.Text())
		}
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 42 || !slices.Contains(rest, "got TERM") {
			t.Fatalf("exit %v, output %q: want CMD to get SIGTERM and orionctl to exit 42", err, rest)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		cmd := exec.Command(bin, "--socket", d.Socket, "exec", "--", "no-such-agent-xyz")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 127 || !strings.Contains(errb.String(), "no-such-agent-xyz") {
			t.Fatalf("exit %v, stderr %q: want 127 naming the command", err, errb.String())
		}
	})
}

// A write oriond refuses is printed on exec's stderr with its reason and
// path, and the model is told that only the person can lift it. (A
// workspace outside the allowed roots is refused before the agent starts:
// TestExecRefusesWorkspaceBeforeStarting.)
func TestExecRefusedWriteOnStderr(t *testing.T) {
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	if err := os.MkdirAll(filepath.Join(d.Root, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	var toModel string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if !strings.Contains(string(body), `"role":"tool"`) {
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"WritePlanTool_begin","arguments":"{\"intent\":\"n\",\"target_file\":\".git/hooks/pre-commit\",\"operation\":\"create\"}"}}]}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		mu.Lock()
		toModel = string(body)
		mu.Unlock()
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"Could not write."},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	cmd := exec.Command(bin, "--socket", d.Socket, "exec", "--openai-upstream", up.URL+"/v1", "--", "sh", "-c",
		`curl -sS -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-x' "$OPENAI_BASE_URL/chat/completions" `+
			`-d '{"model":"m","messages":[{"role":"user","content":"write notes.md"}]}'`)
	cmd.Dir = d.Root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("orionctl exec: %v\nstderr %s", err, errb.String())
	}
	t.Logf("orionctl exec's stderr:\n%s", errb.String())
	if !strings.Contains(errb.String(), "level=WARN") || !strings.Contains(errb.String(), `msg="write refused"`) ||
		!strings.Contains(errb.String(), "path=.git/hooks/pre-commit") || !strings.Contains(errb.String(), "protected_path") &&
		!strings.Contains(errb.String(), "begin_refused") {
		t.Errorf("stderr does not show the refusal with its reason and path:\n%s", errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(toModel, "tell the person") || !strings.Contains(toModel, "--allow-protected") {
		t.Errorf("the model was not told to tell the person the setting to change:\n%s", toModel)
	}
	if _, err := os.Stat(filepath.Join(d.Root, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a protected file was written")
	}
}
