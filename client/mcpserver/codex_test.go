package mcpserver_test

import (
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// codexMCPModel is a Responses API upstream whose model writes target
// through Orion's MCP tools as Codex CLI offers them (function calls in
// the mcp__orion namespace), after trying a protected path: write_begin,
// the content in chunks through write_append, write_finalize.
type codexMCPModel struct {
	target string
	chunks []string
	mu     sync.Mutex
	bodies []string
}

func (m *codexMCPModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.Error(w, `{"error":{"message":"not scripted","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	turn := len(m.bodies)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	resp := func(status string) map[string]any {
		return map[string]any{"id": fmt.Sprintf("resp_%d", turn), "object": "response", "status": status,
			"model": "orion-test-model", "output": []any{},
			"usage": map[string]int{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
	}
	event(map[string]any{"type": "response.created", "response": resp("in_progress")})
	call := func(name string, args map[string]any) {
		a, _ := json.Marshal(args)
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", turn), "call_id": fmt.Sprintf("call_%d", turn),
			"namespace": "mcp__orion", "name": name, "arguments": string(a), "status": "completed"}
		event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	}
	id := ""
	if m := geminiSessionRE.FindStringSubmatch(string(body)); m != nil {
		id = strings.Trim(m[1], `\".,`)
	}
	switch n := turn - 3; {
	case turn == 1:
		call("write_begin", map[string]any{"target_file": ".git/hooks/pre-commit", "operation": "create", "intent": "add a hook"})
	case turn == 2:
		call("write_begin", map[string]any{"target_file": m.target, "operation": "create", "intent": "write the table"})
	case n < len(m.chunks):
		call("write_append", map[string]any{"session_id": id, "seq": n + 1, "chunk": m.chunks[n]})
	case n == len(m.chunks):
		call("write_finalize", map[string]any{"session_id": id})
	default:
		item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", turn), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Done.", "annotations": []any{}}}}
		event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	}
	event(map[string]any{"type": "response.completed", "response": resp("completed")})
}

// Codex CLI as an MCP host of orionctl mcp, headless: Orion's tools are
// offered to its model in the mcp__orion namespace, a protected path is
// refused and the model told why, and a file written through the chunked
// write tools lands byte-identical.
func TestCodexCLIMCPHost(t *testing.T) {
	codex := agentcli.Install(t, agentcli.Codex)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	project := filepath.Join(d.Root, "myproject")
	mkdir(t, project)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d of the table, with \"quotes\" and \\ backslashes\n", i)
	}
	content := b.String()
	var chunks []string
	// content ends in a newline: no empty last piece, 30 chunks of 100 lines.
	lines := strings.SplitAfter(content, "\n")
	lines = lines[:len(lines)-1]
	for i := 0; i < len(lines); i += 100 {
		chunks = append(chunks, strings.Join(lines[i:min(i+100, len(lines))], ""))
	}
	model := &codexMCPModel{target: "big.txt", chunks: chunks}
	up := httptest.NewServer(model)
	defer up.Close()

	codexHome := t.TempDir()
	args, _ := json.Marshal([]string{"--socket", d.Socket, "mcp"})
	cfg := fmt.Sprintf(`model = "orion-test-model"
model_provider = "orion"

[model_providers.orion]
name = "orion"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
unbounded_connection_retries = false

[mcp_servers.orion]
command = %q
args = %s
default_tools_approval_mode = "approve"
`, up.URL+"/v1", bin, args)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write",
		"Write big.txt.")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + codexHome, "TMPDIR=" + home,
		"OPENAI_API_KEY=sk-dummy-codex",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("Codex CLI %s with orionctl mcp took %v", agentcli.Codex.Version, time.Since(start))
	if err != nil {
		t.Fatalf("codex exec: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	model.mu.Lock()
	bodies := append([]string(nil), model.bodies...)
	model.mu.Unlock()
	if len(bodies) == 0 {
		t.Fatalf("no model request\nstdout %s\nstderr %s", out.String(), errb.String())
	}
	if os.Getenv("ORION_DUMP_TURNS") != "" {
		for i, body := range bodies {
			os.WriteFile(fmt.Sprintf("%s/codex%d.json", os.Getenv("ORION_DUMP_TURNS"), i+1), []byte(body), 0o644)
		}
	}
	for _, tool := range []string{"write_begin", "write_append", "write_finalize", "write_file", "edit_file"} {
		if !strings.Contains(bodies[0], `"name":"`+tool+`"`) {
			t.Errorf("Codex CLI does not offer its model %s", tool)
		}
	}
	if !strings.Contains(bodies[0], `"mcp__orion"`) {
		t.Errorf("Codex CLI does not offer Orion's tools in the mcp__orion namespace")
	}
	got, err := os.ReadFile(filepath.Join(project, "big.txt"))
	if err != nil || string(got) != content {
		t.Errorf("myproject/big.txt: %d bytes, %v; want %d bytes in %d chunks\nstdout %s\nstderr %s",
			len(got), err, len(content), len(chunks), out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(project, ".git", "hooks", "pre-commit")); err == nil {
		t.Error(".git/hooks/pre-commit was written")
	}
	if got := testdaemon.SessionClient(t, bin, d.Socket, "big.txt"); !strings.Contains(strings.ToLower(got), "codex") {
		t.Errorf("orionctl sessions list names the session's client %q, want the host (Codex) in it", got)
	}
	if want := len(chunks) + 4; len(bodies) != want {
		t.Fatalf("%d model requests, want %d\nstdout %s", len(bodies), want, out.String())
	}
	// The refusal reached the model: the request after the refused call
	// answers it with the reason.
	var second struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	_ = json.Unmarshal([]byte(bodies[1]), &second)
	refused := false
	for _, it := range second.Input {
		if it.Type == "function_call_output" && it.CallID == "call_1" && strings.Contains(string(it.Output), "is protected") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the request after the refused write_begin does not tell the model why: %s", bodies[1][max(0, len(bodies[1])-1500):])
	}
}
