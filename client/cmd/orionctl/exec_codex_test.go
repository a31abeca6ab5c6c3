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

// codexScript is a Responses API model that tries a protected path, then
// writes target in 40 text deltas, then says it is done.
func codexScript(target, content string) func(*fakemodel.Turn) {
	return func(t *fakemodel.Turn) {
		call := func(callID, args string) {
			item := map[string]any{"type": "function_call", "id": "fc_1", "call_id": callID, "name": "WritePlanTool_begin", "arguments": ""}
			t.Event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
			t.Event(map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": args})
			item["arguments"] = args
			t.Event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
		}
		switch t.N {
		case 1:
			call("call_p", `{"intent":"hook","target_file":".git/hooks/pre-commit","operation":"create"}`)
		case 2:
			call("call_w", `{"intent":"table","target_file":"`+target+`","operation":"create"}`)
		case 3:
			t.Message(append(fakemodel.Pieces(content, 40), markerRE.FindString(t.Body)+"\n")...)
		default:
			t.Message("Done.")
		}
	}
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
	content := fakemodel.Table(3000)
	model := fakemodel.Responses(codexScript("big.txt", content))
	up := httptest.NewServer(model)
	defer up.Close()

	// A CODEX_HOME of the test's own with no provider at all: exec's
	// overrides alone point Codex at the proxy.
	codexHome, home := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \""+fakemodel.ResponsesModel+"\"\n\n"+fakemodel.CodexConfig), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.Socket, "exec", "--openai-upstream", up.URL+"/v1", "--",
		codex, "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write", "Write big.txt.")
	cmd.Dir = project
	cmd.Env = fakemodel.CodexEnv(home, codexHome)
	out, errb := agentcli.Run(t, cmd, fmt.Sprintf("orionctl exec -- codex (Codex CLI %s)", agentcli.Codex.Version))
	checkExecWroteTable(t, project, content, out, errb)
	bodies := model.Bodies()
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
