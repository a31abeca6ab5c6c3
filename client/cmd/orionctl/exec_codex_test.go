package main

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

// responsesModel is a Responses API upstream whose model tries a
// protected path, then writes target in 40 text deltas, then says it is
// done. It keeps each request's body.
type responsesModel struct {
	target, content string
	mu              sync.Mutex
	bodies          []string
}

func (m *responsesModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost {
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	turn := len(m.bodies)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	ev := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	resp := map[string]any{"id": fmt.Sprintf("resp_%d", turn), "object": "response", "model": "fake-model", "output": []any{}}
	ev(map[string]any{"type": "response.created", "response": resp})
	call := func(callID, args string) {
		item := map[string]any{"type": "function_call", "id": "fc_1", "call_id": callID, "name": "WritePlanTool_begin", "arguments": ""}
		ev(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		ev(map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": args})
		item["arguments"] = args
		ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	}
	text := func(pieces ...string) {
		ev(map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "content": []any{}}})
		for _, p := range pieces {
			ev(map[string]any{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": p})
		}
		ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{"type": "message", "id": "msg_1",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": strings.Join(pieces, "")}}}})
	}
	switch turn {
	case 1:
		call("call_p", `{"intent":"hook","target_file":".git/hooks/pre-commit","operation":"create"}`)
	case 2:
		call("call_w", `{"intent":"table","target_file":"`+m.target+`","operation":"create"}`)
	case 3:
		var pieces []string
		for c := m.content; len(c) > 0; {
			n := min(len(c), len(m.content)/40+1)
			pieces = append(pieces, c[:n])
			c = c[n:]
		}
		text(append(pieces, markerRE.FindString(string(body))+"\n")...)
	default:
		text("Done.")
	}
	resp["status"] = "completed"
	resp["usage"] = map[string]int{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
	ev(map[string]any{"type": "response.completed", "response": resp})
}

// orionctl exec -- codex exec, from a project directory: Codex CLI, given
// nothing but what exec sets, writes a 3,000-line file into the directory
// it was started in through oriond, and its model hears that a protected
// path was refused.
func TestExecCodex(t *testing.T) {
	codex := agentcli.Install(t, agentcli.Codex)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	project := filepath.Join(d.Root, "myproject")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d of the table, with \"quotes\" and \\ backslashes\n", i)
	}
	content := b.String()
	model := &responsesModel{target: "big.txt", content: content}
	up := httptest.NewServer(model)
	defer up.Close()

	// A CODEX_HOME of the test's own with no provider at all: exec's
	// overrides alone point Codex at the proxy.
	codexHome, home := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \"fake-model\"\n[analytics]\nenabled = false\n"+
		"[features]\nplugins = false\nunbounded_connection_retries = false\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.Socket, "exec", "--openai-upstream", up.URL+"/v1", "--",
		codex, "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write", "Write big.txt.")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "CODEX_HOME=" + codexHome,
		"OPENAI_API_KEY=sk-dummy-codex", "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("orionctl exec -- codex (Codex CLI %s) took %v", agentcli.Codex.Version, time.Since(start))
	if err != nil {
		t.Fatalf("orionctl exec: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	got, err := os.ReadFile(filepath.Join(project, "big.txt"))
	if err != nil || string(got) != content {
		t.Errorf("myproject/big.txt: %d bytes, %v; want %d bytes\nstdout %s\nstderr %s", len(got), err, len(content), out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "Wrote big.txt: 3,000 lines") {
		t.Errorf("Codex did not show the written file:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "write refused") || !strings.Contains(errb.String(), "pre-commit") {
		t.Errorf("exec's stderr does not name the refused write:\n%s", errb.String())
	}
	model.mu.Lock()
	bodies := append([]string(nil), model.bodies...)
	model.mu.Unlock()
	if len(bodies) != 4 {
		t.Fatalf("%d model requests, want 4", len(bodies))
	}
	// The listing names the agent, not only the proxy's process.
	if got := testdaemon.SessionClient(t, bin, d.Socket, "big.txt"); !strings.HasSuffix(got, "(codex)") {
		t.Errorf("sessions list shows the client %q, want it to name codex", got)
	}
	if !strings.Contains(bodies[1], `"call_id":"call_p"`) || !strings.Contains(bodies[1], "is protected") {
		t.Errorf("the request after the refused call does not tell the model why")
	}
}
