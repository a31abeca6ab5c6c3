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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/testdaemon"
)

var geminiSessionRE = regexp.MustCompile(`Session (\S+) is open`)

// geminiMCPModel is a Gemini API upstream whose model writes target
// through Orion's MCP tools as Gemini CLI names them, after trying a
// protected path: write_begin, the content in chunks through
// write_append, write_finalize.
type geminiMCPModel struct {
	target string
	chunks []string
	mu     sync.Mutex
	bodies []string
}

func (m *geminiMCPModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		http.Error(w, `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`, http.StatusNotFound)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	turn := len(m.bodies)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	say := func(parts ...any) {
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": parts}, "index": 0, "finishReason": "STOP"}},
			"modelVersion":  "gemini-2.5-flash",
			"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}
	call := func(name string, args map[string]any) {
		say(map[string]any{"functionCall": map[string]any{"name": "mcp_orion_" + name, "args": args}})
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
		say(map[string]string{"text": "Done."})
	}
}

// Gemini CLI as an MCP host of orionctl mcp, in its headless default
// mode: Orion's chunked write tools are offered to its model (write_file
// is not: Gemini CLI hides an MCP tool named as one of its own), a
// protected path is refused and the model told why, and a file written
// through them lands byte-identical.
func TestGeminiCLIMCPHost(t *testing.T) {
	gem := agentcli.Install(t, agentcli.Gemini)
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
	lines := strings.SplitAfter(content, "\n")
	for i := 0; i < len(lines); i += 100 {
		chunks = append(chunks, strings.Join(lines[i:min(i+100, len(lines))], ""))
	}
	model := &geminiMCPModel{target: "big.txt", chunks: chunks}
	up := httptest.NewServer(model)
	defer up.Close()

	home := t.TempDir()
	mkdir(t, filepath.Join(home, ".gemini"))
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false}, "telemetry": map[string]any{"enabled": false},
		"general": map[string]any{"enableAutoUpdate": false, "retryFetchErrors": false, "maxAttempts": 1},
		"mcpServers": map[string]any{"orion": map[string]any{"command": bin, "args": []string{"--socket", d.Socket, "mcp"},
			"cwd": project, "trust": true}},
	}
	sb, _ := json.Marshal(settings)
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), sb, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gem, "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", "Write big.txt.")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "GEMINI_API_KEY=dummy-gemini",
		"GOOGLE_GEMINI_BASE_URL=" + up.URL, "GEMINI_CLI_NO_RELAUNCH=true",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("Gemini CLI %s with orionctl mcp took %v", agentcli.Gemini.Version, time.Since(start))
	if err != nil {
		t.Fatalf("gemini: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	model.mu.Lock()
	bodies := append([]string(nil), model.bodies...)
	model.mu.Unlock()
	if len(bodies) == 0 {
		t.Fatalf("no model request\nstdout %s\nstderr %s", out.String(), errb.String())
	}
	for _, tool := range []string{"mcp_orion_write_begin", "mcp_orion_write_append", "mcp_orion_write_finalize", "mcp_orion_edit_file"} {
		if !strings.Contains(bodies[0], `"`+tool+`"`) {
			t.Errorf("Gemini CLI does not offer its model %s", tool)
		}
	}
	// What docs/mcp.md tells Gemini users: their model is not offered
	// Orion's write_file in this mode.
	if strings.Contains(bodies[0], `"mcp_orion_write_file"`) {
		t.Errorf("Gemini CLI now offers mcp_orion_write_file in its default mode: update docs/mcp.md")
	}
	got, err := os.ReadFile(filepath.Join(project, "big.txt"))
	if err != nil || string(got) != content {
		t.Errorf("myproject/big.txt: %d bytes, %v; want %d bytes in %d chunks\nstdout %s\nstderr %s",
			len(got), err, len(content), len(chunks), out.String(), errb.String())
	}
	if got := testdaemon.SessionClient(t, bin, d.Socket, "big.txt"); !strings.Contains(strings.ToLower(got), "gemini") {
		t.Errorf("orionctl sessions list names the session's client %q, want the host (Gemini CLI) in it", got)
	}
	if want := len(chunks) + 4; len(bodies) != want {
		t.Fatalf("%d model requests, want %d", len(bodies), want)
	}
	if !strings.Contains(bodies[1], `"functionResponse"`) || !strings.Contains(bodies[1], "is protected") {
		t.Errorf("the request after the refused write_begin does not tell the model why")
	}
}
