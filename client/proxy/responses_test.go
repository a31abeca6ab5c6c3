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
