package mcpserver_test

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

// geminiMCPScript is a Gemini API model that writes target through
// Orion's MCP tools as Gemini CLI names them, after trying a protected
// path: write_begin, the chunks through write_append, write_finalize.
func geminiMCPScript(target string, chunks []string) func(*fakemodel.Turn) {
	return func(t *fakemodel.Turn) {
		call := func(name string, args map[string]any) {
			t.Chunk("STOP", map[string]any{"functionCall": map[string]any{"name": "mcp_orion_" + name, "args": args}})
		}
		say := func(text ...string) {
			t.Chunk("STOP", map[string]string{"text": strings.Join(text, "")})
		}
		mcpWriteTurn(t, target, chunks, call, say)
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
	content := fakemodel.Table(3000)
	chunks := fakemodel.LineChunks(content, 100)
	model := fakemodel.Gemini(geminiMCPScript("big.txt", chunks))
	up := httptest.NewServer(model)
	defer up.Close()

	home := t.TempDir()
	mkdir(t, filepath.Join(home, ".gemini"))
	sb := fakemodel.GeminiSettings(map[string]any{
		"mcpServers": map[string]any{"orion": map[string]any{"command": bin, "args": []string{"--socket", d.Socket, "mcp"},
			"cwd": project, "trust": true}},
	})
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), sb, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gem, "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", "Write big.txt.")
	cmd.Dir = project
	cmd.Env = fakemodel.GeminiEnv(home, "GOOGLE_GEMINI_BASE_URL="+up.URL)
	out, errb := agentcli.Run(t, cmd, fmt.Sprintf("Gemini CLI %s with orionctl mcp", agentcli.Gemini.Version))
	bodies := model.Bodies()
	if len(bodies) == 0 {
		t.Fatalf("no model request\nstdout %s\nstderr %s", out, errb)
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
			len(got), err, len(content), len(chunks), out, errb)
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
