package proxy_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client/proxy"
)

// TestWroteLineInert: the "Wrote …" line the agent shows names a target
// whose name carries a bidi override and an escape sequence as visible
// escapes, so the agent's terminal shows the name and obeys nothing.
func TestWroteLineInert(t *testing.T) {
	name := "notes\u202e\x1b]0;pwned\x07gpj.md"
	h := newHarness(t, proxy.Config{},
		oaReply(oaCall(0, "call_1", "WritePlanTool_begin",
			js(map[string]string{"intent": "\x1b[1A\x1b[2K", "target_file": name, "operation": "create"})),
			oaFinish("tool_calls")),
		oaReply(oaText("hello\n"), oaText("{{m0}}\n"), oaFinish("stop")),
		oaReply(oaText("Done."), oaFinish("stop")),
	)
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "write it"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	v := readOpenAIStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, name)); got != "hello\n" {
		t.Fatalf("file %q", got)
	}
	if want := `Wrote notes\u202e\x1b]0;pwned\x07gpj.md: 1 line, 6 bytes.`; !strings.Contains(v.text, want) {
		t.Errorf("agent saw\n%q\nwant it to hold %q", v.text, want)
	}
	if strings.ContainsAny(v.text, "\x1b\x07\u202e") {
		t.Errorf("a control or bidi character reached the agent's text: %q", v.text)
	}
}
