package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/fakemodel"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// geminiScript is a Gemini API model that tries a protected path, then
// writes target in 40 chunks, then says it is done.
func geminiScript(target, content string) func(*fakemodel.Turn) {
	return func(t *fakemodel.Turn) {
		call := func(target string) {
			t.Chunk("STOP", map[string]any{"functionCall": map[string]any{"name": "WritePlanTool_begin",
				"args": map[string]string{"intent": "write", "target_file": target, "operation": "create"}}})
		}
		switch t.N {
		case 1:
			call(".git/hooks/pre-commit")
		case 2:
			call(target)
		case 3:
			for _, p := range fakemodel.Pieces(content, 40) {
				t.Chunk("", map[string]string{"text": p})
			}
			t.Chunk("STOP", map[string]string{"text": markerRE.FindString(t.Body) + "\n"})
		default:
			t.Chunk("STOP", map[string]string{"text": "Done."})
		}
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
	content := fakemodel.Table(3000)
	model := fakemodel.Gemini(geminiScript("big.txt", content))
	up := httptest.NewServer(model)
	defer up.Close()

	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), fakemodel.GeminiSettings(nil), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.Socket, "exec", "--gemini-upstream", up.URL, "--",
		gem, "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", "Write big.txt.")
	cmd.Dir = project
	cmd.Env = fakemodel.GeminiEnv(home)
	out, errb := agentcli.Run(t, cmd, fmt.Sprintf("orionctl exec -- gemini (Gemini CLI %s)", agentcli.Gemini.Version))
	checkExecWroteTable(t, project, content, out, errb)
	bodies := model.Bodies()
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
