package proxy_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client/proxy"
)

// --echo content on a proxy without a secret shows a file the request
// wrote whole, never one it appended to: the rest of that file is not the
// caller's to read. With the secret the whole file is shown.
func TestEchoWithoutSecret(t *testing.T) {
	for _, c := range []struct {
		name   string
		token  string
		echoed bool
	}{
		{"NoSecret", "", false},
		{"Secret", "echo-test-token-0123456789", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, proxy.Config{Echo: proxy.EchoContent, Token: c.token},
				oaReply(oaCall(0, "call_1", "WritePlanTool_begin", beginArgs("app.conf", "append")), oaFinish("tool_calls")),
				oaReply(oaText("x=1\n{{m0}}\n"), oaFinish("stop")),
				oaReply(oaText("Done."), oaFinish("stop")),
			)
			if err := os.WriteFile(filepath.Join(h.d.Root, "app.conf"), []byte("DB_PASSWORD=hunter2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			status, body := h.post(t, "/v1/chat/completions", chatRequest(false, "append to app.conf"), nil)
			if status != http.StatusOK || !strings.Contains(body, "Wrote app.conf") {
				t.Fatalf("status %d: %s", status, body)
			}
			if got := strings.Contains(body, "hunter2"); got != c.echoed {
				t.Errorf("the file's earlier text shown: %v, want %v:\n%s", got, c.echoed, body)
			}
			if !c.echoed && !strings.Contains(body, "not echoed") {
				t.Errorf("the agent is not told why the file is not shown:\n%s", body)
			}
		})
	}
}
