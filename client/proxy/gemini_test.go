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

// gmChunk is one chunk of a Gemini stream with the given parts.
func gmChunk(finish string, parts ...any) part {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	v := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-2.5-flash", "responseId": "gm_fake"}
	if finish != "" {
		v["usageMetadata"] = map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
	}
	return part{raw: "data: " + js(v) + "\r\n\r\n"}
}

func gmText(pieces ...string) reply {
	var ps []part
	for _, p := range pieces {
		ps = append(ps, gmChunk("", map[string]string{"text": p}))
	}
	return reply{parts: append(ps, gmChunk("STOP", map[string]string{"text": ""}))}
}

func gmCall(name string, args map[string]any) reply {
	return reply{parts: []part{gmChunk("STOP", map[string]any{"functionCall": map[string]any{"name": name, "args": args}})}}
}

// Gemini CLI itself, headless, through the proxy's Gemini API: a
// protected path is refused and the model hears why, then the model
// writes a 3,000-line file in 40 chunks, and Gemini CLI gets one ordinary
// answer.
func TestGeminiCLI(t *testing.T) {
	bin := agentcli.Install(t, agentcli.Gemini)
	content := lines(3000, "gm")
	script := []reply{
		gmCall("WritePlanTool_begin", map[string]any{"intent": "hook", "target_file": ".git/hooks/pre-commit", "operation": "create"}),
		gmCall("WritePlanTool_begin", map[string]any{"intent": "table", "target_file": "big.txt", "operation": "create"}),
		gmText(append(chunks(content, 40), "{{m0:0:7}}", "{{m0:7:}}", "\n")...),
		gmText("All 3000 lines are in big.txt."),
	}
	h := newHarness(t, proxy.Config{Token: "gemini-test-token-0123456789abcdef"}, script...)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), fakemodel.GeminiSettings(nil), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", "Write big.txt: 3000 numbered lines.")
	cmd.Dir = h.d.Root
	cmd.Env = fakemodel.GeminiEnv(home, "GOOGLE_GEMINI_BASE_URL="+h.base)
	out, errb := agentcli.Run(t, cmd, fmt.Sprintf("gemini -p (Gemini CLI %s)", agentcli.Gemini.Version), "\nproxy log:\n"+h.logs.String())
	if got := readFile(t, filepath.Join(h.d.Root, "big.txt")); got != content {
		t.Errorf("big.txt differs: got %d bytes, want %d\nstdout %s\nstderr %s", len(got), len(content), out, errb)
	}
	if !strings.Contains(out, "Wrote big.txt: 3,000 lines") || !strings.Contains(out, "All 3000 lines are in big.txt.") {
		t.Errorf("Gemini CLI's output lacks the written file or the last word:\n%s", out)
	}
	var turns []upstreamRequest
	for _, req := range h.up.all() {
		if strings.HasSuffix(req.path, ":streamGenerateContent") {
			turns = append(turns, req)
		}
	}
	if len(turns) != 4 {
		t.Fatalf("%d streamed upstream requests, want 4", len(turns))
	}
	for i, req := range turns {
		if got := req.header.Get("X-Goog-Api-Key"); got != "dummy-gemini" {
			t.Errorf("upstream request %d: x-goog-api-key %q, want Gemini CLI's", i, got)
		}
		var body struct {
			Tools []struct {
				FunctionDeclarations []struct{ Name string } `json:"functionDeclarations"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(req.body, &body)
		var names []string
		for _, tl := range body.Tools {
			for _, f := range tl.FunctionDeclarations {
				names = append(names, f.Name)
			}
		}
		if len(names) < 2 || strings.Count(strings.Join(names, ","), "WritePlanTool_begin") != 1 {
			t.Errorf("upstream request %d: want Gemini CLI's tools and WritePlanTool_begin once: %v", i, names)
		}
	}
	if b := string(turns[1].body); !strings.Contains(b, `"functionResponse"`) || !strings.Contains(b, "is protected") {
		t.Errorf("the request after the refused call does not tell the model why")
	}
}
