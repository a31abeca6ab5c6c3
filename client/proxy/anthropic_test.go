package proxy_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
)

// messageView is what an agent made of a Messages stream.
type messageView struct {
	text   string
	tools  []string // name(input)
	stop   string
	usage  map[string]int
	errors []string
	pings  int
	// blocks counts content_block_start events, to check the indexes the
	// agent sees run 0, 1, 2, ...
	blocks int
}

func readMessagesStream(t *testing.T, body string) messageView {
	t.Helper()
	var v messageView
	var stopped bool
	inputs := map[int]string{}
	names := map[int]string{}
	for _, d := range sseEvents(body) {
		var ev struct {
			Type         string
			Index        int
			ContentBlock struct{ Type, Name string } `json:"content_block"`
			Delta        struct {
				Type, Text  string
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			}
			Usage map[string]int
			Error struct{ Message string }
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("bad event %q: %v", d, err)
		}
		switch ev.Type {
		case "content_block_start":
			if ev.Index != v.blocks {
				t.Errorf("block index %d, want %d", ev.Index, v.blocks)
			}
			v.blocks++
			if ev.ContentBlock.Type == "tool_use" {
				names[ev.Index] = ev.ContentBlock.Name
			}
		case "content_block_delta":
			v.text += ev.Delta.Text
			inputs[ev.Index] += ev.Delta.PartialJSON
		case "content_block_stop":
			if n, ok := names[ev.Index]; ok {
				v.tools = append(v.tools, n+"("+inputs[ev.Index]+")")
			}
		case "message_delta":
			v.stop, v.usage = ev.Delta.StopReason, ev.Usage
		case "message_stop":
			stopped = true
		case "ping":
			v.pings++
		case "error":
			v.errors = append(v.errors, ev.Error.Message)
		}
	}
	if !stopped && len(v.errors) == 0 {
		t.Errorf("no message_stop:\n%s", body)
	}
	return v
}

func messagesRequest(stream bool, prompt string) map[string]any {
	return map[string]any{
		"model":      "claude-fake",
		"max_tokens": 1024,
		"stream":     stream,
		"system":     "You are a coding agent.",
		"messages":   []any{map[string]string{"role": "user", "content": prompt}},
		"tools": []any{map[string]any{"name": "Bash", "description": "run a command",
			"input_schema": map[string]any{"type": "object"}}},
	}
}

func TestAnthropicStreamWritesFile(t *testing.T) {
	content := lines(50, "msg")
	cut := strings.Index(content, "msg line 26")
	h := newHarness(t, proxy.Config{KeepAlive: 200 * time.Millisecond},
		anReply("tool_use", anText(0, "Writing it."),
			anTool(1, "toolu_1", "WritePlanTool_begin", `{"intent":"w",`, `"target_file":"m.txt",`, `"operation":"create"}`)),
		anReply("max_tokens", anText(0, content[:cut-10], pause(1200*time.Millisecond), content[cut-10:cut])),
		anReply("end_turn", anText(0, content[cut:], "{{m0:0:5}}", "{{m0:5:}}", "\n")),
		anReply("tool_use", anText(0, "Now listing."), anTool(1, "toolu_2", "Bash", `{"command":`, `"ls"}`)),
	)
	status, body := h.post(t, "/v1/messages", messagesRequest(true, "write m.txt"), map[string]string{"Anthropic-Version": "2023-06-01"})
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	v := readMessagesStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, "m.txt")); got != content {
		t.Fatalf("file differs:\n got %q\nwant %q", got, content)
	}
	if want := "Writing it.\nWrote m.txt: 50 lines, 2 KiB.\nNow listing."; v.text != want {
		t.Errorf("agent saw %q, want %q", v.text, want)
	}
	if len(v.tools) != 1 || v.tools[0] != `Bash({"command":"ls"})` || v.stop != "tool_use" {
		t.Errorf("tools %v stop %q", v.tools, v.stop)
	}
	if v.usage["input_tokens"] != 40 || v.usage["output_tokens"] != 20 {
		t.Errorf("usage %v, want the sum of four requests", v.usage)
	}
	if v.pings == 0 {
		t.Errorf("no ping during the pause")
	}
	reqs := h.up.requests()
	var first struct {
		System string
		Tools  []struct{ Name string }
		Stream bool
	}
	if err := json.Unmarshal(reqs[0], &first); err != nil {
		t.Fatal(err)
	}
	if !first.Stream || !strings.HasPrefix(first.System, "You are a coding agent.\n\n") || !strings.Contains(first.System, "WritePlanTool_begin") ||
		len(first.Tools) != 2 || first.Tools[1].Name != "WritePlanTool_begin" {
		t.Errorf("first request: %s", reqs[0])
	}
	if !strings.Contains(string(reqs[1]), `"tool_use_id":"toolu_1"`) {
		t.Errorf("second request lacks the tool result: %s", reqs[1])
	}
	if h.up.hdrs[0].Get("X-Api-Key") != "sk-ant-SECRETKEY" || h.up.hdrs[0].Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("headers not forwarded: %v", h.up.hdrs[0])
	}
}

func TestAnthropicNonStreamingAndErrors(t *testing.T) {
	t.Run("NonStreaming", func(t *testing.T) {
		h := newHarness(t, proxy.Config{},
			anReply("tool_use", anTool(0, "toolu_1", "WritePlanTool_begin", `{"intent":"w","target_file":"n.txt","operation":"create"}`)),
			anReply("end_turn", anText(0, "one\ntwo\n{{m0}}")),
			anReply("end_turn", anText(0, "Done.")),
		)
		status, body := h.post(t, "/v1/messages", messagesRequest(false, "write n.txt"), nil)
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		var msg struct {
			Type       string
			Content    []struct{ Type, Text string }
			StopReason string `json:"stop_reason"`
			Usage      map[string]int
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != "Wrote n.txt: 2 lines, 8 bytes.\nDone." || msg.StopReason != "end_turn" {
			t.Errorf("got %s", body)
		}
		if got := readFile(t, filepath.Join(h.d.Root, "n.txt")); got != "one\ntwo\n" {
			t.Errorf("n.txt %q", got)
		}
	})
	t.Run("UpstreamError", func(t *testing.T) {
		h := newHarness(t, proxy.Config{},
			reply{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
		status, body := h.post(t, "/v1/messages", messagesRequest(true, "hi"), nil)
		if status != 529 || !strings.Contains(body, "overloaded_error") {
			t.Errorf("got %d %s", status, body)
		}
	})
	t.Run("StreamError", func(t *testing.T) {
		h := newHarness(t, proxy.Config{},
			reply{parts: []part{anEvent("error", map[string]any{"type": "error", "error": map[string]string{"type": "overloaded_error", "message": "Overloaded"}})}})
		status, body := h.post(t, "/v1/messages", messagesRequest(true, "hi"), nil)
		if status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
		if v := readMessagesStream(t, body); len(v.errors) != 1 || v.errors[0] != "Overloaded" {
			t.Errorf("errors %v in %s", v.errors, body)
		}
	})
	t.Run("DaemonUnreachable", func(t *testing.T) {
		h := newHarness(t, proxy.Config{Socket: filepath.Join(t.TempDir(), "none.sock")})
		status, body := h.post(t, "/v1/messages", messagesRequest(true, "hi"), nil)
		if status != http.StatusServiceUnavailable || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "oriond is not reachable") {
			t.Errorf("got %d %s", status, body)
		}
	})
}
