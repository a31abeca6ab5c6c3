package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/fakemodel"
)

// Responses stream parts.

func rsEvent(v map[string]any) part {
	return part{raw: "event: " + v["type"].(string) + "\ndata: " + js(v) + "\n\n"}
}

// rsReply is one Responses stream: created, the items, completed.
func rsReply(items ...[]part) reply {
	parts := []part{rsEvent(map[string]any{"type": "response.created", "response": map[string]any{
		"id": "resp_fake", "object": "response", "status": "in_progress", "model": "fake-model", "output": []any{}}})}
	for _, it := range items {
		parts = append(parts, it...)
	}
	parts = append(parts, rsEvent(map[string]any{"type": "response.completed", "response": map[string]any{
		"id": "resp_fake", "object": "response", "status": "completed", "model": "fake-model", "output": []any{},
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}))
	return reply{parts: parts}
}

// rsText is a message item at output index i, one delta per piece.
func rsText(i int, pieces ...string) []part {
	id := fmt.Sprintf("msg_fake_%d", i)
	ps := []part{rsEvent(map[string]any{"type": "response.output_item.added", "output_index": i,
		"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})}
	for _, p := range pieces {
		ps = append(ps, rsEvent(map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i,
			"content_index": 0, "delta": p}))
	}
	text := strings.Join(pieces, "")
	return append(ps, rsEvent(map[string]any{"type": "response.output_item.done", "output_index": i,
		"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}}))
}

// rsCall is a function_call item at output index i whose arguments
// arrive in fragments.
func rsCall(i int, callID, name string, fragments ...string) []part {
	id := fmt.Sprintf("fc_fake_%d", i)
	ps := []part{rsEvent(map[string]any{"type": "response.output_item.added", "output_index": i,
		"item": map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": "", "status": "in_progress"}})}
	for _, f := range fragments {
		ps = append(ps, rsEvent(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": f}))
	}
	args := strings.Join(fragments, "")
	return append(ps, rsEvent(map[string]any{"type": "response.output_item.done", "output_index": i,
		"item": map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": args, "status": "completed"}}))
}

// chunks splits s into n pieces of about the same size, on line ends.
func chunks(s string, n int) []string {
	var out []string
	size := len(s)/n + 1
	for len(s) > 0 {
		k := min(len(s), size)
		if j := strings.IndexByte(s[k-1:], '\n'); j >= 0 {
			k += j
		} else {
			k = len(s)
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// codexScript has the model try a protected path first, then write
// target in 40 deltas, then say it is done.
func codexScript(target, content string) []reply {
	text := append(chunks(content, 40), "{{m0:0:7}}", "{{m0:7:}}", "\n")
	return []reply{
		rsReply(rsCall(0, "call_p", "WritePlanTool_begin", `{"intent":"hook",`, `"target_file":".git/hooks/pre-commit","operation":"create"}`)),
		rsReply(rsCall(0, "call_w", "WritePlanTool_begin", `{"intent":"write the table",`, `"target_file":"`+target+`","operation":"create"}`)),
		rsReply(rsText(0, text...)),
		rsReply(rsText(0, "All 3000 lines are in "+target+".")),
	}
}

// Codex CLI itself, headless, through the proxy's Responses API: a
// protected path is refused and the model hears why, then the model
// writes a 3,000-line file in 40 deltas, and Codex gets one ordinary
// answer.
func TestCodexCLI(t *testing.T) {
	bin := agentcli.Install(t, agentcli.Codex)
	content := lines(3000, "cx")
	h := newHarness(t, proxy.Config{Token: "codex-test-token-0123456789abcdef"}, codexScript("big.txt", content)...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write",
		"Write big.txt: 3000 numbered lines.")
	cmd.Dir = h.d.Root
	cmd.Env = fakemodel.CodexEnv(t.TempDir(), fakemodel.CodexHome(t, h.base+"/v1", ""))
	cmd.Stdin = nil
	out, errb := agentcli.Run(t, cmd, fmt.Sprintf("codex exec (Codex CLI %s)", agentcli.Codex.Version), "\nproxy log:\n"+h.logs.String())
	if got := readFile(t, filepath.Join(h.d.Root, "big.txt")); got != content {
		t.Errorf("big.txt differs: got %d bytes, want %d\ncodex: %s\n%s", len(got), len(content), out, errb)
	}
	if _, err := os.Stat(filepath.Join(h.d.Root, ".git", "hooks", "pre-commit")); err == nil {
		t.Error(".git/hooks/pre-commit was written")
	}
	// Codex's last agent message carries the proxy's line and the model's
	// last word.
	var last string
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			last = ev.Item.Text
		}
	}
	if !strings.Contains(last, "Wrote big.txt: 3,000 lines") || !strings.HasSuffix(last, "All 3000 lines are in big.txt.") {
		t.Errorf("Codex's answer: %q\n%s", last, out)
	}
	reqs := h.up.all()
	if len(reqs) != 4 {
		t.Fatalf("%d upstream requests, want 4", len(reqs))
	}
	for i, req := range reqs {
		if req.path != "/v1/responses" {
			t.Errorf("upstream request %d went to %s", i, req.path)
		}
		if got := req.header.Get("Authorization"); got != "Bearer sk-dummy-codex" {
			t.Errorf("upstream request %d: authorization %q, want Codex's key", i, got)
		}
		var body struct {
			Tools []struct {
				Type, Name string
			}
			Input []json.RawMessage
		}
		if err := json.Unmarshal(req.body, &body); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range body.Tools {
			names = append(names, tl.Name)
		}
		if len(names) < 2 || names[len(names)-1] != "WritePlanTool_begin" || strings.Count(strings.Join(names, ","), "WritePlanTool_begin") != 1 {
			t.Errorf("upstream request %d: want Codex's tools and WritePlanTool_begin once, last: %v", i, names)
		}
	}
	// The refusal reached the model: the request after the refused call
	// answers it with the reason.
	var second struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		} `json:"input"`
	}
	_ = json.Unmarshal(reqs[1].body, &second)
	refused := false
	for _, it := range second.Input {
		if it.Type == "function_call_output" && it.CallID == "call_p" && strings.Contains(it.Output, "is protected") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the second upstream request does not tell the model the protected path was refused: %+v", second.Input[max(0, len(second.Input)-3):])
	}
}
