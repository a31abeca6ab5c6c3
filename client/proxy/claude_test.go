package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/claudecode"
)

var claudeVer string

// installClaudeCode installs Claude Code (cached across runs) or skips.
func installClaudeCode(t *testing.T) string {
	t.Helper()
	bin, v := claudecode.Install(t)
	claudeVer = v
	return bin
}

// claudeResult is Claude Code's --output-format json result.
type claudeResult struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	IsError  bool   `json:"is_error"`
	Result   string `json:"result"`
	NumTurns int    `json:"num_turns"`
}

// runClaude runs Claude Code headless against the proxy, offline: a dummy
// key, a HOME of its own (no login, settings or history of the person
// running the tests), telemetry, error reports, the auto-updater and other
// non-essential traffic off, and any request that would still leave the
// machine sent to a proxy that refuses it. The environment is built from
// scratch, so that the runner's own ANTHROPIC_* or CLAUDE_* settings do not
// leak in.
func runClaude(t *testing.T, bin string, h *harness, prompt string) claudeResult {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--output-format", "json")
	cmd.Dir = h.d.Root
	cmd.Env = claudecode.Env(home, h.base)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var r claudeResult
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("claude -p: %v; its output is not a JSON result: %v\nstdout %s\nstderr %s\nproxy log:\n%s",
			err, jerr, out.String(), errb.String(), h.logs.String())
	}
	if err != nil {
		t.Logf("claude -p exited with %v\nstderr %s", err, errb.String())
	}
	return r
}

// claudeCodeSide answers what Claude Code sends besides its turns: token
// counting, and any request without its own tools (title or topic
// generation, quota probes with a small model). Its turns carry Bash.
func claudeCodeSide(path string, body []byte) (reply, bool) {
	if strings.HasSuffix(path, "/count_tokens") {
		return reply{status: 200, body: `{"input_tokens":1000}`}, true
	}
	if !slices.Contains(toolNames(body), "Bash") {
		return anReply("end_turn", anText(0, "Side reply.")), true
	}
	return reply{}, false
}

func toolNames(body []byte) []string {
	var req struct {
		Tools []struct{ Name string }
	}
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return names
}

// claudeScript makes the model write target through WritePlanTool_begin in
// four upstream requests: the call, the content cut twice at max_tokens
// (each continuation picks up where the cut was), the marker, and a last
// turn. restart, when set, runs in the middle of the second part.
func claudeScript(target, content string, restart *part) []reply {
	third := len(content) / 3
	pieces := func(s string) []any {
		var ps []any
		for len(s) > 0 {
			n := min(len(s), 4000)
			ps = append(ps, s[:n])
			s = s[n:]
		}
		return ps
	}
	second := pieces(content[third : 2*third])
	if restart != nil {
		mid := len(second) / 2
		second = append(second[:mid:mid], append([]any{*restart}, second[mid:]...)...)
	}
	return []reply{
		anReply("tool_use", anText(0, "I'll write "+target+"."),
			anTool(1, "toolu_cc1", "WritePlanTool_begin", `{"intent":"write the table",`,
				`"target_file":"`+target+`","operation":"create"}`)),
		anReply("max_tokens", anText(0, pieces(content[:third])...)),
		anReply("max_tokens", anText(0, second...)),
		anReply("end_turn", anText(0, append(pieces(content[2*third:]), "{{m0:0:7}}", "{{m0:7:}}", "\n")...)),
		anReply("end_turn", anText(0, "All 3000 lines are in "+target+".")),
	}
}

// checkClaudeRun checks the file, Claude Code's result and what went
// upstream.
func checkClaudeRun(t *testing.T, h *harness, r claudeResult, target, content string) {
	t.Helper()
	if got := readFile(t, filepath.Join(h.d.Root, target)); got != content {
		t.Errorf("%s differs: got %d bytes, want %d", target, len(got), len(content))
	}
	if r.Type != "result" || r.IsError || r.Subtype != "success" {
		t.Errorf("Claude Code's result: %+v\nproxy log:\n%s", r, h.logs.String())
	}
	if !strings.Contains(r.Result, "Wrote "+target+": 3,000 lines") || !strings.HasSuffix(r.Result, "All 3000 lines are in "+target+".") {
		t.Errorf("Claude Code's result text: %q", r.Result)
	}
	var turns int
	for i, req := range h.up.all() {
		if req.path != "/v1/messages" {
			continue
		}
		names := toolNames(req.body)
		if !slices.Contains(names, "Bash") {
			continue
		}
		turns++
		for _, own := range []string{"Read", "Write", "Edit"} {
			if !slices.Contains(names, own) {
				t.Errorf("upstream request %d lacks Claude Code's %s tool: %v", i, own, names)
			}
		}
		if names[len(names)-1] != "WritePlanTool_begin" || slices.Index(names, "WritePlanTool_begin") != len(names)-1 {
			t.Errorf("upstream request %d: want WritePlanTool_begin once, after Claude Code's tools: %v", i, names)
		}
		if got := req.header.Get("X-Api-Key"); got != "sk-ant-dummy-claude-code" {
			t.Errorf("upstream request %d: x-api-key %q, want Claude Code's", i, got)
		}
	}
	if turns != 5 {
		t.Errorf("%d upstream requests with Claude Code's tools, want 5", turns)
	}
}

// Claude Code itself, headless, through the proxy: the model writes a
// 3,000-line file through WritePlanTool_begin in four requests, cut twice
// at max_tokens, and Claude Code gets one ordinary answer.
func TestClaudeCode(t *testing.T) {
	bin := installClaudeCode(t)
	t.Logf("Claude Code %s", claudeVer)
	content := lines(3000, "cc")

	// With a token, carried in the base URL's path as orionctl exec does.
	t.Run("Write", func(t *testing.T) {
		h := newHarness(t, proxy.Config{Token: "claude-code-test-token-0123456789"}, claudeScript("big.txt", content, nil)...)
		h.up.setSide(claudeCodeSide)
		start := time.Now()
		r := runClaude(t, bin, h, "Write big.txt: 3000 numbered lines.")
		t.Logf("claude -p took %v", time.Since(start))
		checkClaudeRun(t, h, r, "big.txt", content)
	})

	// oriond SIGKILLed and restarted while the proxy streams the file for
	// Claude Code: the controller resumes from next_seq, the file lands
	// whole and once, and Claude Code sees one ordinary answer.
	t.Run("DaemonRestart", func(t *testing.T) {
		var h *harness
		var restarted atomic.Bool
		restart := part{do: func() {
			time.Sleep(300 * time.Millisecond) // the controller's flush of what came lands first
			h.d.Kill()
			h.d.Restart()
			restarted.Store(true)
		}}
		h = newHarness(t, proxy.Config{}, claudeScript("big.txt", content, &restart)...)
		h.up.setSide(claudeCodeSide)
		r := runClaude(t, bin, h, "Write big.txt: 3000 numbered lines.")
		checkClaudeRun(t, h, r, "big.txt", content)
		if !restarted.Load() {
			t.Fatal("the script never reached the restart")
		}
		// Once: no second copy, no leftover temp file next to it.
		entries, _ := os.ReadDir(h.d.Root)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"big.txt"}) {
			t.Errorf("the workspace holds %v, want big.txt alone", names)
		}
	})
}

// oriond down: Claude Code shows the proxy's message at once instead of
// retrying for minutes. The proxy answers 503 with x-should-retry: false;
// the test counts the requests the proxy saw (a retry would be a second
// turn request) and checks that the text reached the person.
func TestClaudeCodeDaemonDown(t *testing.T) {
	bin := installClaudeCode(t)
	h := newHarness(t, proxy.Config{})
	h.up.setSide(claudeCodeSide)
	h.d.Stop()
	start := time.Now()
	r := runClaude(t, bin, h, "Write notes.md.")
	took := time.Since(start)
	t.Logf("Claude Code %s answered in %v: %q", claudeVer, took, r.Result)
	if !r.IsError || !strings.Contains(r.Result, "oriond is not reachable") {
		t.Errorf("Claude Code's result: %+v, want an error naming oriond", r)
	}
	if turns := h.requests("/v1/messages", 503); turns != 1 {
		t.Errorf("the proxy answered %d turn requests with 503, want 1 (no retries)\n%s", turns, h.logs.String())
	}
	for _, req := range h.up.all() {
		if slices.Contains(toolNames(req.body), "Bash") {
			t.Errorf("a turn reached the upstream with oriond down: %s", req.path)
		}
	}
}
