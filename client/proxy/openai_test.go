package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
)

// agentView is what an agent made of a chat-completions stream.
type agentView struct {
	text      string
	calls     []string // name(arguments)
	finish    string
	usage     map[string]int
	errors    []string
	keepAlive int
}

func readOpenAIStream(t *testing.T, body string) agentView {
	t.Helper()
	v := agentView{keepAlive: strings.Count(body, ": keep-alive")}
	var done bool
	for _, d := range sseEvents(body) {
		if d == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
			Usage map[string]int
			Error *struct{ Message string }
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("agent got a bad chunk %q: %v", d, err)
		}
		if ch.Error != nil {
			v.errors = append(v.errors, ch.Error.Message)
		}
		if ch.Usage != nil {
			v.usage = ch.Usage
		}
		for _, c := range ch.Choices {
			v.text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				v.calls = append(v.calls, tc.Function.Name+"("+tc.Function.Arguments+")")
			}
			if c.FinishReason != nil {
				v.finish = *c.FinishReason
			}
		}
	}
	if !done {
		t.Errorf("the stream did not end with [DONE]:\n%s", body)
	}
	return v
}

func chatRequest(stream bool, prompt string) map[string]any {
	return map[string]any{
		"model":          "fake-model",
		"stream":         stream,
		"stream_options": map[string]bool{"include_usage": true},
		"messages": []any{
			map[string]string{"role": "system", "content": "You are a coding agent."},
			map[string]string{"role": "user", "content": prompt},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "bash", "description": "run a command", "parameters": map[string]any{"type": "object"}}}},
	}
}

func beginArgs(target, op string) string {
	return fmt.Sprintf(`{"intent":"write %s","target_file":"%s","operation":"%s"}`, target, target, op)
}

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %d with \"quotes\" and \\ backslashes\n", prefix, i)
	}
	return b.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The whole loop: the call's arguments in fragments, the content in
// deltas with the marker split across three of them, the summary back to
// the model, and a last turn without the tool.
func TestOpenAIStreamWritesFile(t *testing.T) {
	content := lines(40, "app")
	half := len(content) / 2
	h := newHarness(t, proxy.Config{},
		oaReply(oaText("I'll write it.\n"),
			oaCall(0, "call_1", "WritePlanTool_begin", `{"intent":"write app",`),
			oaCall(0, "", "", `"target_file":"src/app.txt",`),
			oaCall(0, "", "", `"operation":"create"}`),
			oaFinish("tool_calls")),
		oaReply(oaText(content[:half]), oaText(content[half:]),
			oaText("{{m0:0:7}}"), oaText("{{m0:7:15}}"), oaText("{{m0:15:}}\n"), oaFinish("stop")),
		oaReply(oaText("Done: src/app.txt is written."), oaFinish("stop")),
	)
	if err := os.Mkdir(filepath.Join(h.d.Root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "write src/app.txt"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	v := readOpenAIStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, "src/app.txt")); got != content {
		t.Fatalf("file differs:\n got %q\nwant %q", got, content)
	}
	want := fmt.Sprintf("I'll write it.\nWrote src/app.txt: 40 lines, %d KiB.\nDone: src/app.txt is written.", (len(content)+512)/1024)
	if v.text != want {
		t.Errorf("agent saw\n%q\nwant\n%q", v.text, want)
	}
	if v.finish != "stop" || len(v.calls) != 0 {
		t.Errorf("finish %q calls %v, want stop and none", v.finish, v.calls)
	}
	if got, want := v.usage["prompt_tokens"], 30; got != want {
		t.Errorf("usage prompt_tokens %d, want %d (three inner requests)", got, want)
	}
	reqs := h.up.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream requests, want 3", len(reqs))
	}
	var first struct {
		Stream   bool
		Messages []struct{ Role, Content string }
		Tools    []struct{ Function struct{ Name string } }
	}
	if err := json.Unmarshal(reqs[0], &first); err != nil {
		t.Fatal(err)
	}
	if !first.Stream || len(first.Tools) != 2 || first.Tools[0].Function.Name != "bash" || first.Tools[1].Function.Name != "WritePlanTool_begin" {
		t.Errorf("first upstream request: stream %v tools %+v; want the agent's tool, then WritePlanTool_begin", first.Stream, first.Tools)
	}
	if first.Messages[0].Content != "You are a coding agent." || first.Messages[1].Role != "system" ||
		!strings.Contains(first.Messages[1].Content, "WritePlanTool_begin") {
		t.Errorf("the instruction should follow the agent's system message: %+v", first.Messages[:2])
	}
	if !strings.Contains(string(reqs[1]), `"role":"tool"`) || !markerRE.Match(reqs[1]) {
		t.Errorf("second request lacks the tool result with the marker: %s", reqs[1])
	}
	if !strings.Contains(string(reqs[2]), "the file is written") {
		t.Errorf("third request lacks the summary: %s", reqs[2])
	}
	for _, r := range h.up.hdrs {
		if r.Get("Authorization") != "Bearer sk-test-SECRETKEY" {
			t.Errorf("the API key was not forwarded: %q", r.Get("Authorization"))
		}
		if r.Get(proxy.HeaderWorkspace) != "" {
			t.Errorf("an X-Orion header went upstream")
		}
	}
	if strings.Contains(h.logs.String(), "SECRETKEY") {
		t.Errorf("the API key is in the log:\n%s", h.logs.String())
	}
}

// A response cut at the output limit continues the same file; an idle
// pause inside the content does not split it; a keep-alive reaches the
// agent while nothing else does.
func TestOpenAILengthCutIdlePauseKeepAlive(t *testing.T) {
	content := lines(60, "cut")
	cut := strings.Index(content, "cut line 31")
	h := newHarness(t, proxy.Config{KeepAlive: 200 * time.Millisecond},
		oaReply(oaCall(0, "call_1", "WritePlanTool_begin", beginArgs("big.txt", "create")), oaFinish("tool_calls")),
		oaReply(oaText(content[:cut-20]), pause(1500*time.Millisecond), oaText(content[cut-20:cut]), oaFinish("length")),
		oaReply(oaText(content[cut:]), oaText("{{m0}}\n"), oaFinish("stop")),
		oaReply(oaText("Written."), oaFinish("stop")),
	)
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "write big.txt"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	v := readOpenAIStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, "big.txt")); got != content {
		t.Fatalf("file differs:\n got %q\nwant %q", got, content)
	}
	if !strings.Contains(v.text, "Wrote big.txt: 60 lines") || !strings.HasSuffix(v.text, "Written.") {
		t.Errorf("agent saw %q", v.text)
	}
	if v.keepAlive == 0 {
		t.Errorf("no keep-alive during a 1.5 s pause")
	}
	reqs := h.up.requests()
	if !strings.Contains(string(reqs[2]), "line 31") || !strings.Contains(string(reqs[2]), `"role":"user"`) {
		t.Errorf("the continuation request should ask for line 31: %s", reqs[2])
	}
}

// The model stops without the marker: the daemon's idle prompt goes back,
// and the marker alone finishes the file.
func TestOpenAIStoppedWithoutMarker(t *testing.T) {
	content := lines(5, "idle")
	h := newHarness(t, proxy.Config{},
		oaReply(oaCall(0, "call_1", "WritePlanTool_begin", beginArgs("idle.txt", "create")), oaFinish("tool_calls")),
		oaReply(oaText(content), oaFinish("stop")),
		oaReply(oaText("{{m0}}\n"), oaFinish("stop")),
		oaReply(oaText("ok"), oaFinish("stop")),
	)
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "write idle.txt"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	readOpenAIStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, "idle.txt")); got != content {
		t.Fatalf("file differs:\n got %q\nwant %q", got, content)
	}
	if reqs := h.up.requests(); !strings.Contains(string(reqs[2]), "reply with") && !strings.Contains(string(reqs[2]), "marker") {
		t.Errorf("the third request should carry the idle prompt: %s", reqs[2])
	}
}

// Two files in one turn, and the agent's own call in the same response:
// both files are written first, then the agent gets its call back, with
// no further upstream request.
func TestOpenAISeveralFilesMixedTurn(t *testing.T) {
	a, b := lines(7, "a"), lines(9, "b")
	h := newHarness(t, proxy.Config{},
		oaReply(oaCall(0, "call_a", "WritePlanTool_begin", beginArgs("a.txt", "create")),
			oaCall(1, "call_bash", "bash", `{"cmd":`),
			oaCall(2, "call_b", "WritePlanTool_begin", beginArgs("b.txt", "create")),
			oaCall(1, "", "", `"ls"}`),
			oaFinish("tool_calls")),
		oaReply(oaText(a+"{{m0}}\n"+b), oaText("{{m1}}"), oaFinish("stop")),
	)
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "write a and b, then ls"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	v := readOpenAIStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, "a.txt")); got != a {
		t.Errorf("a.txt: %q", got)
	}
	if got := readFile(t, filepath.Join(h.d.Root, "b.txt")); got != b {
		t.Errorf("b.txt: %q", got)
	}
	if len(v.calls) != 1 || v.calls[0] != `bash({"cmd":"ls"})` || v.finish != "tool_calls" {
		t.Errorf("agent got calls %v finish %q; want bash({\"cmd\":\"ls\"}) and tool_calls", v.calls, v.finish)
	}
	if !strings.Contains(v.text, "Wrote a.txt: 7 lines") || !strings.Contains(v.text, "Wrote b.txt: 9 lines") {
		t.Errorf("agent saw %q", v.text)
	}
	if n := len(h.up.requests()); n != 2 {
		t.Errorf("%d upstream requests, want 2", n)
	}
}

// Non-streaming requests get one chat.completion; --echo content puts the
// file in a fence.
func TestOpenAINonStreamingEcho(t *testing.T) {
	content := "package main\n\nfunc main() {}\n"
	h := newHarness(t, proxy.Config{Echo: proxy.EchoContent},
		oaReply(oaCall(0, "call_1", "WritePlanTool_begin", beginArgs("main.go", "create")), oaFinish("tool_calls")),
		oaReply(oaText(content+"{{m0}}\n"), oaFinish("stop")),
		oaReply(oaText("Done."), oaFinish("stop")),
	)
	status, body := h.post(t, "/v1/chat/completions", chatRequest(false, "write main.go"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var resp struct {
		Object  string
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage map[string]int
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := "Wrote main.go: 3 lines, 29 bytes.\n```go\n" + content + "```\nDone."
	if resp.Object != "chat.completion" || resp.Choices[0].Message.Content != want || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("got %s\nwant content %q", body, want)
	}
	if resp.Usage["total_tokens"] != 45 {
		t.Errorf("usage %v, want 45 total", resp.Usage)
	}
}

// An upstream error keeps its status and body; one in a later round comes
// as an error event in the stream the agent already reads.
func TestOpenAIUpstreamErrors(t *testing.T) {
	t.Run("FirstRequest", func(t *testing.T) {
		h := newHarness(t, proxy.Config{},
			reply{status: http.StatusTooManyRequests, body: `{"error":{"message":"slow down","type":"rate_limit_error"}}`})
		status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "hi"), nil)
		if status != http.StatusTooManyRequests || !strings.Contains(body, "slow down") {
			t.Errorf("got %d %s", status, body)
		}
	})
	t.Run("InnerRequest", func(t *testing.T) {
		h := newHarness(t, proxy.Config{},
			oaReply(oaCall(0, "call_1", "WritePlanTool_begin", beginArgs("e.txt", "create")), oaFinish("tool_calls")),
			reply{status: http.StatusInternalServerError, body: `{"error":{"message":"upstream broke","type":"server_error"}}`})
		status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "hi"), nil)
		if status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
		v := readOpenAIStream(t, body)
		if len(v.errors) != 1 || v.errors[0] != "upstream broke" {
			t.Errorf("errors %v in %s", v.errors, body)
		}
	})
	t.Run("DaemonUnreachable", func(t *testing.T) {
		h := newHarness(t, proxy.Config{Socket: filepath.Join(t.TempDir(), "none.sock")})
		status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "hi"), nil)
		if status != http.StatusServiceUnavailable || !strings.Contains(body, "oriond is not reachable") ||
			!strings.Contains(body, `"error"`) || !strings.Contains(body, proxy.HeaderBypass) {
			t.Errorf("got %d %s", status, body)
		}
	})
}

// Bypass and the other /v1/ paths reach the upstream unchanged.
func TestOpenAIPassThrough(t *testing.T) {
	h := newHarness(t, proxy.Config{},
		oaReply(oaText("plain"), oaFinish("stop")),
		oaReply(oaText("own"), oaFinish("stop")))
	req := chatRequest(true, "hi")
	status, body := h.post(t, "/v1/chat/completions", req, map[string]string{proxy.HeaderBypass: "1"})
	if status != http.StatusOK || !strings.Contains(body, "plain") {
		t.Fatalf("bypass: %d %s", status, body)
	}
	if got := h.up.requests()[0]; string(got) != js(req) {
		t.Errorf("bypass changed the body:\n got %s\nwant %s", got, js(req))
	}
	// A request that carries the tool itself belongs to an agent that
	// drives sessions on its own.
	own := chatRequest(true, "hi")
	own["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "WritePlanTool_begin"}}}
	if status, _ := h.post(t, "/v1/chat/completions", own, nil); status != http.StatusOK {
		t.Fatalf("own tool: %d", status)
	}
	if got := h.up.requests()[1]; string(got) != js(own) {
		t.Errorf("a request carrying the tool was changed: %s", got)
	}
	resp, err := http.Get(h.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || h.up.paths[2] != "/v1/models" {
		t.Errorf("models: %d at %v", resp.StatusCode, h.up.paths)
	}
}
