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

// geminiModel is a Gemini API upstream whose model tries a protected
// path, then writes target in 40 chunks, then says it is done.
type geminiModel struct {
	target, content string
	mu              sync.Mutex
	bodies          []string
}

func (m *geminiModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		http.Error(w, `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`, http.StatusNotFound)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	turn := len(m.bodies)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(finish string, parts ...any) {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-2.5-flash",
			"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}
	call := func(target string) {
		chunk("STOP", map[string]any{"functionCall": map[string]any{"name": "WritePlanTool_begin",
			"args": map[string]string{"intent": "write", "target_file": target, "operation": "create"}}})
	}
	switch turn {
	case 1:
		call(".git/hooks/pre-commit")
	case 2:
		call(m.target)
	case 3:
		for c := m.content; len(c) > 0; {
			n := min(len(c), len(m.content)/40+1)
			chunk("", map[string]string{"text": c[:n]})
			c = c[n:]
		}
		chunk("STOP", map[string]string{"text": markerRE.FindString(string(body)) + "\n"})
	default:
		chunk("STOP", map[string]string{"text": "Done."})
	}
}

// orionctl exec -- gemini -p, from a project directory: Gemini CLI, given
// nothing but GOOGLE_GEMINI_BASE_URL as exec sets it, writes a 3,000-line
// file into the directory it was started in through oriond, and its model
// hears that a protected path was refused.
func TestExecGemini(t *testing.T) {
	gem := agentcli.Install(t, agentcli.Gemini)
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
	model := &geminiModel{target: "big.txt", content: content}
	up := httptest.NewServer(model)
	defer up.Close()

	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"},
"folderTrust":{"enabled":false}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},
"general":{"enableAutoUpdate":false,"retryFetchErrors":false,"maxAttempts":1}}`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.Socket, "exec", "--gemini-upstream", up.URL, "--",
		gem, "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", "Write big.txt.")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "GEMINI_API_KEY=dummy-gemini",
		"GEMINI_CLI_NO_RELAUNCH=true", "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("orionctl exec -- gemini (Gemini CLI %s) took %v", agentcli.Gemini.Version, time.Since(start))
	if err != nil {
		t.Fatalf("orionctl exec: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	got, err := os.ReadFile(filepath.Join(project, "big.txt"))
	if err != nil || string(got) != content {
		t.Errorf("myproject/big.txt: %d bytes, %v; want %d bytes\nstdout %s\nstderr %s", len(got), err, len(content), out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "Wrote big.txt: 3,000 lines") {
		t.Errorf("Gemini CLI did not show the written file:\n%s", out.String())
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
	if got := testdaemon.SessionClient(t, bin, d.Socket, "big.txt"); !strings.HasSuffix(got, "(gemini)") {
		t.Errorf("sessions list shows the client %q, want it to name gemini", got)
	}
	if !strings.Contains(bodies[1], `"functionResponse"`) || !strings.Contains(bodies[1], "is protected") {
		t.Errorf("the request after the refused call does not tell the model why")
	}
}
