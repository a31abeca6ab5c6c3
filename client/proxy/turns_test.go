package proxy_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/protocol"
)

// waitTurns polls turn.list until ok accepts the workspace's turns.
func waitTurns(t *testing.T, socket, ws string, ok func([]protocol.TurnInfo) bool) []protocol.TurnInfo {
	t.Helper()
	ctx := context.Background()
	c, err := client.Dial(ctx, socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var turns []protocol.TurnInfo
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := c.TurnList(ctx, protocol.TurnListParams{WorkspaceRoot: ws})
		if err != nil {
			t.Fatal(err)
		}
		if turns = res.Turns; ok(turns) {
			return turns
		}
	}
	t.Fatalf("turns never as expected: %+v", turns)
	return nil
}

func ended(n int) func([]protocol.TurnInfo) bool {
	return func(ts []protocol.TurnInfo) bool {
		if len(ts) != n {
			return false
		}
		for _, tr := range ts {
			if tr.State != protocol.TurnEnded {
				return false
			}
		}
		return true
	}
}

func fileKinds(tr protocol.TurnInfo) map[string]string {
	m := map[string]string{}
	for _, f := range tr.Files {
		m[f.Path] = f.Kind
	}
	return m
}

// A turn through the Anthropic API: the person's message begins it, the
// agent's own tool writes files (not through Orion), a side request
// without tools (as Claude Code sends for a title) neither ends nor
// begins one, and the model's answer without a tool call ends it, named
// after the agent's User-Agent.
func TestTurnMarkedByProxyAnthropic(t *testing.T) {
	h := newHarness(t, proxy.Config{},
		anReply("tool_use", anText(0, "Writing."), anTool(1, "toolu_1", "Bash", `{"command":"echo hi > a.txt"}`)),
		anReply("end_turn", anText(0, "A title")),
		anReply("end_turn", anText(0, "Done.")),
	)
	ws := h.d.Root
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ua := map[string]string{"User-Agent": "claude-cli/2.0.0 (external, cli)"}
	first := messagesRequest(true, "write a.txt")
	// Claude Code puts its environment in a system message after the
	// person's.
	first["messages"] = []any{map[string]any{"role": "user", "content": "write a.txt"},
		map[string]any{"role": "system", "content": "Environment: linux"}}
	if status, body := h.post(t, "/v1/messages", first, ua); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	side := messagesRequest(false, "a title for this conversation")
	delete(side, "tools")
	if status, body := h.post(t, "/v1/messages", side, ua); status != http.StatusOK {
		t.Fatalf("side request: status %d: %s", status, body)
	}
	// The agent's own tool at work, outside Orion.
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next := messagesRequest(true, "write a.txt")
	next["messages"] = []any{
		map[string]any{"role": "user", "content": "write a.txt"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash",
			"input": map[string]string{"command": "echo hi > a.txt"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}}},
	}
	if status, body := h.post(t, "/v1/messages", next, ua); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	turns := waitTurns(t, h.d.Socket, ws, ended(1))
	tr := turns[0]
	if tr.Agent != "claude-cli" {
		t.Errorf("agent %q, want claude-cli", tr.Agent)
	}
	kinds := fileKinds(tr)
	if kinds["a.txt"] != protocol.ChangeCreated || kinds["keep.txt"] != protocol.ChangeModified {
		t.Errorf("files %+v, want a.txt created and keep.txt modified", tr.Files)
	}
}

// Through the OpenAI API the agent stops mid-turn (its model asked for a
// tool and no result ever came back): the turn ends after the idle
// period, and the next message of the person begins another.
func TestTurnIdleEndsOpenAI(t *testing.T) {
	h := newHarness(t, proxy.Config{TurnIdle: 300 * time.Millisecond, Agent: "mycli"},
		oaReply(oaCall(0, "call_1", "bash", `{"command":"ls"}`), oaFinish("tool_calls")),
		oaReply(oaText("Hello."), oaFinish("stop")),
	)
	if status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "look around"), nil); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	turns := waitTurns(t, h.d.Socket, h.d.Root, ended(1))
	if turns[0].Agent != "mycli" {
		t.Errorf("agent %q, want the configured mycli", turns[0].Agent)
	}
	if status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "hello"), nil); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	waitTurns(t, h.d.Socket, h.d.Root, ended(2))
}

// A workspace oriond will not record (outside its allowed roots): the
// agent's requests are served as ever, and the refusal is logged once.
func TestTurnRefusedNeverBlocks(t *testing.T) {
	h := newHarness(t, proxy.Config{},
		anReply("end_turn", anText(0, "One.")),
		anReply("end_turn", anText(0, "Two.")),
	)
	outside := map[string]string{proxy.HeaderWorkspace: t.TempDir()}
	for i := range 2 {
		status, body := h.post(t, "/v1/messages", messagesRequest(true, "hi"), outside)
		if status != http.StatusOK || !strings.Contains(body, []string{"One.", "Two."}[i]) {
			t.Fatalf("request %d: status %d: %s", i, status, body)
		}
	}
	if n := strings.Count(h.logs.String(), "did not mark the agent's turn"); n != 1 {
		t.Errorf("refusal logged %d times, want once:\n%s", n, h.logs.String())
	}
}
