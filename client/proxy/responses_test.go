package proxy_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client/proxy"
)

// A Responses request that is not streamed, with a string input and a
// previous_response_id: the file lands, the agent gets one response
// object whose id is the last upstream response's (so its next
// previous_response_id names a response holding the whole turn), and
// every upstream request keeps the agent's previous_response_id.
func TestResponsesNotStreamed(t *testing.T) {
	content := lines(200, "rs")
	h := newHarness(t, proxy.Config{},
		rsReply(rsCall(0, "call_1", "WritePlanTool_begin", beginArgs("x.txt", "create"))),
		rsReply(rsText(0, append(chunks(content, 5), "{{m0}}", "\n")...)),
		rsReply(rsText(0, "Done.")))
	status, body := h.post(t, "/v1/responses", map[string]any{"model": "fake-model", "input": "Write x.txt.",
		"previous_response_id": "resp_earlier", "store": true}, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := readFile(t, filepath.Join(h.d.Root, "x.txt")); got != content {
		t.Errorf("x.txt: %d bytes, want %d", len(got), len(content))
	}
	var resp struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if resp.Object != "response" || resp.Status != "completed" || resp.ID != "resp_fake" || len(resp.Output) != 1 ||
		!strings.Contains(resp.Output[0].Content[0].Text, "Wrote x.txt: 200 lines") || !strings.HasSuffix(resp.Output[0].Content[0].Text, "Done.") {
		t.Errorf("response: %s", body)
	}
	if resp.Usage.InputTokens != 30 {
		t.Errorf("input_tokens %d, want the three rounds' 30", resp.Usage.InputTokens)
	}
	for i, b := range h.up.requests() {
		var req struct {
			Prev   string            `json:"previous_response_id"`
			Stream bool              `json:"stream"`
			Input  []json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		if req.Prev != "resp_earlier" || !req.Stream || len(req.Input) == 0 || !strings.Contains(string(req.Input[0]), "Write x.txt.") {
			t.Errorf("upstream request %d: %.400s", i, b)
		}
	}
}

// Gemini's generateContent (not streamed): the proxy streams from the
// upstream and answers with one response.
func TestGeminiNotStreamed(t *testing.T) {
	h := newHarness(t, proxy.Config{},
		gmCall("WritePlanTool_begin", map[string]any{"intent": "x", "target_file": "g.txt", "operation": "create"}),
		gmText("one\n", "two\n", "{{m0}}", "\n"),
		gmText("Done."))
	status, body := h.post(t, "/v1beta/models/gemini-2.5-flash:generateContent",
		map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]string{"text": "Write g.txt."}}}}}, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := readFile(t, filepath.Join(h.d.Root, "g.txt")); got != "one\ntwo\n" {
		t.Errorf("g.txt: %q", got)
	}
	if !strings.Contains(body, "Wrote g.txt: 2 lines") || !strings.Contains(body, `"finishReason":"STOP"`) {
		t.Errorf("response: %s", body)
	}
	for i, r := range h.up.all() {
		if r.path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" {
			t.Errorf("upstream request %d went to %s", i, r.path)
		}
	}
}

// Codex's apply_patch is a custom (freeform) tool: the model's call
// reaches the agent as a custom_tool_call with its raw input intact, and
// the agent's tools reach the model unchanged, with WritePlanTool_begin
// added once.
func TestResponsesCustomToolPassedThrough(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hello \"x\"\n*** End Patch"
	id := "ctc_fake_0"
	h := newHarness(t, proxy.Config{}, rsReply(
		[]part{rsEvent(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{
			"type": "custom_tool_call", "id": id, "call_id": "call_patch", "name": "apply_patch", "input": ""}})},
		[]part{rsEvent(map[string]any{"type": "response.custom_tool_call_input.delta", "item_id": id, "output_index": 0, "delta": patch[:20]})},
		[]part{rsEvent(map[string]any{"type": "response.custom_tool_call_input.delta", "item_id": id, "output_index": 0, "delta": patch[20:]})},
		[]part{rsEvent(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
			"type": "custom_tool_call", "id": id, "call_id": "call_patch", "name": "apply_patch", "input": patch}})}))
	custom := map[string]any{"type": "custom", "name": "apply_patch", "description": "patch",
		"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}
	status, body := h.post(t, "/v1/responses", map[string]any{"model": "fake-model", "stream": true, "store": false,
		"input": []any{map[string]any{"role": "user", "content": "patch it"}}, "tools": []any{custom}}, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	found := false
	for _, ev := range sseEvents(body) {
		var e struct {
			Type string `json:"type"`
			Item struct {
				Type, Name, Input string
			} `json:"item"`
		}
		_ = json.Unmarshal([]byte(ev), &e)
		if e.Type == "response.output_item.done" && e.Item.Type == "custom_tool_call" {
			found = e.Item.Name == "apply_patch" && e.Item.Input == patch
		}
	}
	if !found || !strings.Contains(body, `"type":"response.completed"`) {
		t.Errorf("the agent did not get the apply_patch call intact:\n%s", body)
	}
	var up struct {
		Tools []map[string]any `json:"tools"`
	}
	_ = json.Unmarshal(h.up.requests()[0], &up)
	if len(up.Tools) != 2 || up.Tools[0]["type"] != "custom" || up.Tools[0]["format"] == nil || up.Tools[1]["name"] != "WritePlanTool_begin" {
		t.Errorf("upstream tools: %v", up.Tools)
	}
}
