package proxy_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
)

// oriond killed with SIGKILL and restarted while the proxy streams a file
// into it: the controller reconnects and resumes from next_seq, the file
// lands whole and once, and the agent sees one ordinary response.
func TestDaemonKilledMidFile(t *testing.T) {
	content := lines(800, "kill")
	cut := len(content) * 2 / 3
	var h *harness
	restart := part{do: func() {
		time.Sleep(300 * time.Millisecond) // the controller's flush of the first part lands first
		h.d.Kill()
		h.d.Restart()
	}}
	h = newHarness(t, proxy.Config{},
		oaReply(oaCall(0, "call_1", "WritePlanTool_begin", beginArgs("k.txt", "create")), oaFinish("tool_calls")),
		oaReply(oaText(content[:cut/2]), oaText(content[cut/2:cut]), restart, oaText(content[cut:]), oaText("{{m0}}\n"), oaFinish("stop")),
		oaReply(oaText("Done."), oaFinish("stop")),
	)
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "write k.txt"), nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	v := readOpenAIStream(t, body)
	if got := readFile(t, filepath.Join(h.d.Root, "k.txt")); got != content {
		t.Fatalf("file differs after the restart: got %d bytes, want %d", len(got), len(content))
	}
	if !strings.HasPrefix(v.text, "Wrote k.txt: 800 lines") || !strings.HasSuffix(v.text, "Done.") || len(v.errors) > 0 {
		t.Errorf("agent saw %q, errors %v", v.text, v.errors)
	}
}
