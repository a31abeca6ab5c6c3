package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/fakemodel"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// codexMCPScript is a Responses API model that writes target through
// Orion's MCP tools as Codex CLI offers them (function calls in the
// mcp__orion namespace), after trying a protected path: write_begin, the
// chunks through write_append, write_finalize.
func codexMCPScript(target string, chunks []string) func(*fakemodel.Turn) {
	return func(t *fakemodel.Turn) {
		call := func(name string, args map[string]any) {
			a, _ := json.Marshal(args)
			item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", t.N), "call_id": fmt.Sprintf("call_%d", t.N),
				"namespace": "mcp__orion", "name": name, "arguments": string(a), "status": "completed"}
			t.Event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
			t.Event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
		}
		mcpWriteTurn(t, target, chunks, call, t.Message)
	}
}

// mcpWriteTurn plays the turn of a model that writes target through
// Orion's chunked write tools, after trying a protected path; call
// names a tool and its arguments in the API's shape, and say ends with
// text.
func mcpWriteTurn(t *fakemodel.Turn, target string, chunks []string, call func(name string, args map[string]any), say func(...string)) {
	switch n := t.N - 3; {
	case t.N == 1:
		call("write_begin", map[string]any{"target_file": ".git/hooks/pre-commit", "operation": "create", "intent": "add a hook"})
	case t.N == 2:
		call("write_begin", map[string]any{"target_file": target, "operation": "create", "intent": "write the table"})
	case n < len(chunks):
		call("write_append", map[string]any{"session_id": sessionID(t.Body), "seq": n + 1, "chunk": chunks[n]})
	case n == len(chunks):
		call("write_finalize", map[string]any{"session_id": sessionID(t.Body)})
	default:
		say("Done.")
	}
}

// sessionIDRE finds the session write_begin opened in what the host sent
// back to its model.
var sessionIDRE = regexp.MustCompile(`Session (\S+) is open`)

func sessionID(body string) string {
	if m := sessionIDRE.FindStringSubmatch(body); m != nil {
		return strings.Trim(m[1], `\".,`)
	}
	return ""
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
	content := fakemodel.Table(3000)
	chunks := fakemodel.LineChunks(content, 100)
	model := fakemodel.Responses(codexMCPScript("big.txt", chunks))
	up := httptest.NewServer(model)
	defer up.Close()

	args, _ := json.Marshal([]string{"--socket", d.Socket, "mcp"})
	codexHome := fakemodel.CodexHome(t, up.URL+"/v1", fmt.Sprintf(`
[mcp_servers.orion]
command = %q
args = %s
default_tools_approval_mode = "approve"
`, bin, args))
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write",
		"Write big.txt.")
	cmd.Dir = project
	cmd.Env = fakemodel.CodexEnv(home, codexHome)
	out, errb := agentcli.Run(t, cmd, fmt.Sprintf("Codex CLI %s with orionctl mcp", agentcli.Codex.Version))
	bodies := model.Bodies()
	if len(bodies) == 0 {
		t.Fatalf("no model request\nstdout %s\nstderr %s", out, errb)
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
			len(got), err, len(content), len(chunks), out, errb)
	}
	if _, err := os.Stat(filepath.Join(project, ".git", "hooks", "pre-commit")); err == nil {
		t.Error(".git/hooks/pre-commit was written")
	}
	if got := testdaemon.SessionClient(t, bin, d.Socket, "big.txt"); !strings.Contains(strings.ToLower(got), "codex") {
		t.Errorf("orionctl sessions list names the session's client %q, want the host (Codex) in it", got)
	}
	if want := len(chunks) + 4; len(bodies) != want {
		t.Fatalf("%d model requests, want %d\nstdout %s", len(bodies), want, out)
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
