package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// The SDKs under test: official, installed from the npm registry by the
// test, versions pinned exactly so a new release changes what is tested
// only by a deliberate bump here.
var sdkPackages = []string{"openai@6.49.0", "@anthropic-ai/sdk@1.14.0"}

var (
	sdkOnce sync.Once
	sdkDir  string
	sdkSkip string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sdkDir != "" {
		os.RemoveAll(sdkDir)
	}
	testdaemon.Cleanup()
	os.Exit(code)
}

// installSDKs installs the SDKs once per test run into a temporary
// directory, or says why it could not (no node/npm, registry unreachable).
func installSDKs(t *testing.T) string {
	t.Helper()
	sdkOnce.Do(func() {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				sdkSkip = tool + " is not installed"
				return
			}
		}
		dir, err := os.MkdirTemp("", "orion-proxy-sdk")
		if err != nil {
			sdkSkip = err.Error()
			return
		}
		sdkDir = dir
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
			sdkSkip = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error"}, sdkPackages...)...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			sdkSkip = fmt.Sprintf("npm install %s failed (registry unreachable?): %v\n%s", strings.Join(sdkPackages, " "), err, out.String())
			return
		}
		script, err := os.ReadFile("testdata/sdk/run.mjs")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "run.mjs"), script, 0o644)
		}
		if err != nil {
			sdkSkip = err.Error()
		}
	})
	if sdkSkip != "" {
		// CI installs every real client: there a failed install is a
		// failure, not a skip that would hide the tests it gates.
		if os.Getenv("ORION_REQUIRE_REAL_CLIENTS") != "" {
			t.Fatal("ORION_REQUIRE_REAL_CLIENTS is set, and the real SDK clients could not be installed: " + sdkSkip)
		}
		t.Skip("skipping the real SDK clients: " + sdkSkip)
	}
	return sdkDir
}

// sdkVersion reads an installed package's version.
func sdkVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "unknown"
	}
	var p struct{ Version string }
	_ = json.Unmarshal(b, &p)
	return p.Version
}

type sdkResult struct {
	Text     string
	Streamed string
	Finish   string
	Calls    []map[string]any
	Usage    map[string]any
	Chunks   int
	Error    *string
	Status   int
	Message  string
	Thrown   string
}

// runSDK runs the script in one mode against the proxy.
func runSDK(t *testing.T, dir string, h *harness, mode string) sdkResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs", mode)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PROXY_URL="+h.base, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var r sdkResult
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("node %s: %v %v\nstdout %s\nstderr %s", mode, err, jerr, out.String(), errb.String())
	}
	if r.Thrown != "" {
		t.Fatalf("node %s threw: %s\nproxy log:\n%s", mode, r.Thrown, h.logs.String())
	}
	return r
}

func TestRealSDKs(t *testing.T) {
	dir := installSDKs(t)
	t.Logf("SDKs: openai %s, @anthropic-ai/sdk %s, node %s", sdkVersion(dir, "openai"), sdkVersion(dir, "@anthropic-ai/sdk"), nodeVersion())
	content := lines(120, "sdk")
	check := func(t *testing.T, h *harness, name string) {
		t.Helper()
		if got := readFile(t, filepath.Join(h.d.Root, name)); got != content {
			t.Errorf("%s differs:\n got %q\nwant %q", name, got, content)
		}
	}
	openAIScript := func(target string) []reply {
		return []reply{
			oaReply(oaText("Writing.\n"), oaCall(0, "call_1", "WritePlanTool_begin", `{"intent":"w",`),
				oaCall(0, "", "", `"target_file":"`+target+`","operation":"create"}`), oaFinish("tool_calls")),
			oaReply(oaText(content[:1000]), oaText(content[1000:]+"{{m0:0:9}}"), oaText("{{m0:9:}}\n"), oaFinish("stop")),
			oaReply(oaText("Now ls."), oaCall(0, "call_2", "bash", `{"cmd":"ls"}`), oaFinish("tool_calls")),
		}
	}
	// The stream cases carry a token in the base URL, as orionctl exec
	// gives it.
	t.Run("OpenAIStream", func(t *testing.T) {
		h := newHarness(t, proxy.Config{Token: "sdk-test-token-0123456789"}, openAIScript("s.txt")...)
		r := runSDK(t, dir, h, "openai-stream")
		check(t, h, "s.txt")
		if r.Text != "Writing.\nWrote s.txt: 120 lines, 5 KiB.\nNow ls." || r.Finish != "tool_calls" ||
			len(r.Calls) != 1 || r.Calls[0]["name"] != "bash" || r.Calls[0]["arguments"] != `{"cmd":"ls"}` {
			t.Errorf("the SDK saw %+v", r)
		}
		if r.Usage["total_tokens"] != float64(45) {
			t.Errorf("usage %v", r.Usage)
		}
	})
	t.Run("OpenAICreate", func(t *testing.T) {
		h := newHarness(t, proxy.Config{}, openAIScript("c.txt")...)
		r := runSDK(t, dir, h, "openai-create")
		check(t, h, "c.txt")
		if r.Text != "Writing.\nWrote c.txt: 120 lines, 5 KiB.\nNow ls." || r.Finish != "tool_calls" || len(r.Calls) != 1 {
			t.Errorf("the SDK saw %+v", r)
		}
	})
	t.Run("OpenAIError", func(t *testing.T) {
		h := newHarness(t, proxy.Config{}, reply{status: 429, body: `{"error":{"message":"slow down","type":"rate_limit_error","code":null}}`})
		r := runSDK(t, dir, h, "openai-error")
		if r.Error == nil || *r.Error != "RateLimitError" || r.Status != 429 || !strings.Contains(r.Message, "slow down") {
			t.Errorf("the SDK saw %+v", r)
		}
	})
	anthropicScript := func(target string) []reply {
		return []reply{
			anReply("tool_use", anText(0, "Writing."),
				anTool(1, "toolu_1", "WritePlanTool_begin", `{"intent":"w","target_file":`, `"`+target+`","operation":"create"}`)),
			anReply("end_turn", anText(0, content[:2000], content[2000:], "{{m0:0:4}}", "{{m0:4:}}\n")),
			anReply("tool_use", anText(0, "Now ls."), anTool(1, "toolu_2", "Bash", `{"command":"ls"}`)),
		}
	}
	t.Run("AnthropicStream", func(t *testing.T) {
		h := newHarness(t, proxy.Config{Token: "sdk-test-token-0123456789"}, anthropicScript("a.txt")...)
		r := runSDK(t, dir, h, "anthropic-stream")
		check(t, h, "a.txt")
		want := "Writing.\nWrote a.txt: 120 lines, 5 KiB.\nNow ls."
		if r.Text != want || r.Streamed != want || r.Finish != "tool_use" || len(r.Calls) != 1 || r.Calls[0]["name"] != "Bash" {
			t.Errorf("the SDK saw %+v", r)
		}
		if in, _ := r.Calls[0]["input"].(map[string]any); in["command"] != "ls" {
			t.Errorf("tool input %v", r.Calls[0]["input"])
		}
		if r.Usage["input_tokens"] != float64(30) || r.Usage["output_tokens"] != float64(15) {
			t.Errorf("usage %v", r.Usage)
		}
	})
	t.Run("AnthropicCreate", func(t *testing.T) {
		h := newHarness(t, proxy.Config{},
			anReply("tool_use", anTool(0, "toolu_1", "WritePlanTool_begin", `{"intent":"w","target_file":"b.txt","operation":"create"}`)),
			anReply("end_turn", anText(0, content, "{{m0}}")),
			anReply("end_turn", anText(0, "Done.")))
		r := runSDK(t, dir, h, "anthropic-create")
		check(t, h, "b.txt")
		if r.Text != "Wrote b.txt: 120 lines, 5 KiB.\nDone." || r.Finish != "end_turn" {
			t.Errorf("the SDK saw %+v", r)
		}
	})
	// oriond down: with their default retries, both SDKs raise the
	// proxy's error at once, after one request (x-should-retry: false).
	for _, c := range []struct{ name, mode, path string }{
		{"AnthropicDaemonUnreachable", "anthropic-error-retrying", "/v1/messages"},
		{"OpenAIDaemonUnreachable", "openai-error-retrying", "/v1/chat/completions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, proxy.Config{Socket: filepath.Join(t.TempDir(), "none.sock")})
			start := time.Now()
			r := runSDK(t, dir, h, c.mode)
			t.Logf("the SDK raised after %v", time.Since(start))
			if r.Error == nil || r.Status != 503 || !strings.Contains(r.Message, "oriond is not reachable") {
				t.Errorf("the SDK saw %+v", r)
			}
			if n := h.requests(c.path, 503); n != 1 {
				t.Errorf("the proxy answered %d requests, want 1 (no retries)", n)
			}
		})
	}
}

func nodeVersion() string {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
