package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/claudecode"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// installClaudeCode installs the Claude Code release every test of this
// repository runs (internal/claudecode, one cached install for all).
func installClaudeCode(t *testing.T) (bin, version string) {
	t.Helper()
	return claudecode.Install(t)
}

// claudeResult is Claude Code's --output-format json result.
type claudeResult struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	IsError  bool   `json:"is_error"`
	Result   string `json:"result"`
	NumTurns int    `json:"num_turns"`
}

// runClaude runs Claude Code headless with orionctl mcp as its only MCP
// server, against the fake model, offline: a dummy key, a HOME of its own,
// telemetry and non-essential traffic off, and anything that would still
// leave the machine sent to a closed port. The environment is built from
// scratch so the runner's own ANTHROPIC_* or CLAUDE_* settings stay out.
func runClaude(t *testing.T, bin string, d *testdaemon.Daemon, m *fakeModel, prompt string, env ...string) claudeResult {
	t.Helper()
	home := t.TempDir()
	config := filepath.Join(home, "mcp.json")
	cfg := map[string]any{"mcpServers": map[string]any{"orion": map[string]any{
		"command": testdaemon.Orionctl(t), "args": []string{"--socket", d.Socket, "mcp", "--log-level", "debug"}}}}
	if err := os.WriteFile(config, []byte(js(cfg)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--output-format", "json",
		"--mcp-config", config, "--strict-mcp-config", "--allowedTools", "mcp__orion")
	cmd.Dir = d.Root
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		// Claude Code leaves claude-UID/… in its TMPDIR: in home, it
		// goes with the test.
		"TMPDIR=" + mkdir(t, filepath.Join(home, "tmp")),
		"ANTHROPIC_BASE_URL=" + m.srv.URL,
		"ANTHROPIC_API_KEY=sk-ant-dummy-claude-code",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"HTTPS_PROXY=http://127.0.0.1:9",
		"HTTP_PROXY=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost",
	}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("claude -p took %v", time.Since(start).Round(time.Millisecond))
	var r claudeResult
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("claude -p: %v; its output is not a JSON result: %v\nstdout %s\nstderr %s\nmodel log:\n%s",
			err, jerr, out.String(), errb.String(), m.Log())
	}
	if err != nil {
		t.Logf("claude -p exited with %v\nstderr %s", err, errb.String())
	}
	return r
}

// Tool names as Claude Code shows them to the model.
const (
	ccBegin     = "mcp__orion__write_begin"
	ccAppend    = "mcp__orion__write_append"
	ccFinalize  = "mcp__orion__write_finalize"
	ccWriteFile = "mcp__orion__write_file"
)

var (
	sessionRE = regexp.MustCompile(`Session (\S+) is open`)
	nextSeqRE = regexp.MustCompile(`Next: seq (\d+)`)
	sendSeqRE = regexp.MustCompile(`send seq (\d+) next`)
)

// chunkWriter is the brain of a model that writes one file through the
// chunked tools as the server's instructions say: ToolSearch first when
// Claude Code defers the tools, write_begin, write_append one chunk per
// turn with the seq the last result names, write_finalize, a last word.
type chunkWriter struct {
	t      *testing.T
	target string
	chunks []string
	// cutSeq, when set, is the seq whose first attempt is cut at
	// max_tokens.
	cutSeq int
	// beforeSeq runs before the model sends seq (to kill the daemon).
	beforeSeq func(seq int)
	// onDown runs when a result says oriond is not running: the person
	// does what it says.
	onDown func()

	mu       sync.Mutex
	phase    string
	id       string
	seq      int
	cutDone  bool
	searched bool
	// final is the write_finalize result the model saw.
	final toolResult
	// errors are the error results the model saw.
	errors []toolResult
}

func (w *chunkWriter) next(tr turn) action {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last toolResult
	if len(tr.results) > 0 {
		last = tr.results[len(tr.results)-1]
		if last.isError {
			w.errors = append(w.errors, last)
		}
	}
	if !slices.Contains(tr.tools, ccBegin) && slices.Contains(tr.tools, "ToolSearch") && !w.searched {
		w.searched = true
		return action{text: "Loading the write tools.", tool: "ToolSearch",
			input: js(map[string]any{"query": "select:" + ccBegin + "," + ccAppend + "," + ccFinalize, "max_results": 5})}
	}
	switch w.phase {
	case "":
		w.phase = "begin"
		return action{text: "I'll write " + w.target + " in chunks.", tool: ccBegin,
			input: js(map[string]any{"target_file": w.target, "operation": "create", "intent": "write the table"})}
	case "begin":
		m := sessionRE.FindStringSubmatch(last.text)
		if m == nil {
			w.t.Errorf("write_begin's result names no session: %+v", last)
			return action{text: "I could not begin the write."}
		}
		w.id, w.seq, w.phase = m[1], 1, "append"
		return w.appendAction()
	case "append":
		switch {
		case last.isError && strings.Contains(last.text, "oriond is not running"):
			if w.onDown != nil {
				w.onDown()
			}
		case last.isError:
			if n := nextSeq(last.text); n != 0 {
				w.seq = n
			}
			// Anything else (the cut call's validation error): the same
			// chunk again.
		default:
			n := nextSeq(last.text)
			if n == 0 {
				w.t.Errorf("write_append's result names no next seq: %+v", last)
				return action{text: "Lost track of the write."}
			}
			w.seq = n
		}
		if w.seq > len(w.chunks) {
			w.phase = "finalize"
			return action{tool: ccFinalize, input: js(map[string]any{"session_id": w.id})}
		}
		return w.appendAction()
	case "finalize":
		w.final = last
		w.phase = "done"
		return action{text: "Done: " + last.text}
	}
	return action{text: "Nothing more to do."}
}

// nextSeq reads the seq to send from a result, which Claude Code shows
// the model as the structured content's JSON, another host as the text.
func nextSeq(text string) int {
	var v struct {
		NextSeq int `json:"next_seq"`
	}
	if json.Unmarshal([]byte(text), &v) == nil {
		return v.NextSeq
	}
	for _, re := range []*regexp.Regexp{nextSeqRE, sendSeqRE} {
		if m := re.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}

func (w *chunkWriter) appendAction() action {
	if w.beforeSeq != nil {
		w.beforeSeq(w.seq)
	}
	a := action{tool: ccAppend, input: js(map[string]any{"session_id": w.id, "seq": w.seq, "chunk": w.chunks[w.seq-1]})}
	if w.seq == w.cutSeq && !w.cutDone {
		w.cutDone = true
		a.cut = true
	}
	return a
}

// checkLanded checks the file and Claude Code's result.
func checkLanded(t *testing.T, d *testdaemon.Daemon, m *fakeModel, w *chunkWriter, r claudeResult, content string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(d.Root, w.target))
	if err != nil || string(got) != content {
		t.Errorf("%s: %d bytes (%v), want %d byte-identical\nmodel log:\n%s", w.target, len(got), err, len(content), m.Log())
	}
	if r.Type != "result" || r.IsError || r.Subtype != "success" {
		t.Errorf("Claude Code's result: %+v\nmodel log:\n%s", r, m.Log())
	}
	var sum struct {
		TargetFile string `json:"target_file"`
		Lines      int    `json:"lines"`
		SHA256     string `json:"sha256"`
	}
	if w.final.isError || json.Unmarshal([]byte(w.final.text), &sum) != nil ||
		sum.TargetFile != w.target || sum.Lines != strings.Count(content, "\n") || len(sum.SHA256) != 64 {
		t.Errorf("write_finalize's result as the model saw it: %+v", w.final)
	}
	if !strings.HasPrefix(r.Result, "Done: ") {
		t.Errorf("Claude Code's result text: %q", r.Result)
	}
	// Once: no second copy, no leftover temp file.
	entries, _ := os.ReadDir(filepath.Dir(filepath.Join(d.Root, w.target)))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{filepath.Base(w.target)}) {
		t.Errorf("the directory holds %v, want %s alone", names, filepath.Base(w.target))
	}
}

// Claude Code itself, headless, with orionctl mcp as an MCP server and its
// tools deferred behind ToolSearch (the default).
func TestClaudeCode(t *testing.T) {
	bin, version := installClaudeCode(t)
	t.Logf("Claude Code %s", version)
	content := numbered(3000, "cc")
	prompt := "Write out/table.txt: 3000 numbered lines."

	// A 3,000-line file in 30 chunks lands byte-identical.
	t.Run("Write", func(t *testing.T) {
		d := testdaemon.Start(t)
		w := &chunkWriter{t: t, target: "out/table.txt", chunks: chunks(content, 100)}
		m := newFakeModel(t, w.next)
		r := runClaude(t, bin, d, m, prompt)
		checkLanded(t, d, m, w, r, content)
		if len(w.errors) != 0 {
			t.Errorf("errors the model saw: %+v", w.errors)
		}
		checkToolSearch(t, m)
	})

	// A chunk cut at max_tokens is never run; the model sends it again
	// whole and the file is right.
	t.Run("CutAtMaxTokens", func(t *testing.T) {
		d := testdaemon.Start(t)
		w := &chunkWriter{t: t, target: "out/table.txt", chunks: chunks(content, 100), cutSeq: 7}
		m := newFakeModel(t, w.next)
		r := runClaude(t, bin, d, m, prompt)
		checkLanded(t, d, m, w, r, content)
		if len(w.errors) != 1 {
			t.Errorf("the model saw %d errors, want 1 (the cut call): %+v", len(w.errors), w.errors)
		} else {
			t.Logf("what the model saw after the cut: %.300s", w.errors[0].text)
		}
	})

	// oriond SIGKILLed in the middle: the next write_append finds it down
	// and says what to run; the person runs it, the model sends the same
	// chunk again, the session goes on from the seq the daemon has, and
	// the file lands once.
	t.Run("DaemonRestart", func(t *testing.T) {
		d := testdaemon.Start(t)
		var killed, restarted bool
		w := &chunkWriter{t: t, target: "out/table.txt", chunks: chunks(content, 100),
			beforeSeq: func(seq int) {
				if seq == 16 && !killed {
					killed = true
					d.Kill()
				}
			},
			onDown: func() {
				restarted = true
				d.Restart()
			}}
		m := newFakeModel(t, w.next)
		r := runClaude(t, bin, d, m, prompt)
		checkLanded(t, d, m, w, r, content)
		if !killed || !restarted {
			t.Fatalf("killed %v, restarted %v", killed, restarted)
		}
		if len(w.errors) != 1 || !strings.Contains(w.errors[0].text, "oriond run") {
			t.Errorf("errors the model saw: %+v", w.errors)
		}
	})

	// A refused write reaches the model as a tool error it can act on: the
	// JSON it wrote is broken, the result says where, the corrected write
	// lands.
	t.Run("Refused", func(t *testing.T) {
		d := testdaemon.Start(t)
		var mu sync.Mutex
		step := 0
		var seen []toolResult
		brain := func(tr turn) action {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, tr.results...)
			if !slices.Contains(tr.tools, ccWriteFile) && slices.Contains(tr.tools, "ToolSearch") && step == 0 {
				step = -1
				return action{tool: "ToolSearch", input: js(map[string]any{"query": "select:" + ccWriteFile, "max_results": 5})}
			}
			step = max(step, 0) + 1
			switch step {
			case 1:
				return action{text: "Writing the config.", tool: ccWriteFile,
					input: js(map[string]any{"target_file": "conf.json", "operation": "create", "content": "{\n  \"name\": \"orion\",\n  \"port\": 8080,\n"})}
			case 2:
				return action{text: "Fixing it.", tool: ccWriteFile,
					input: js(map[string]any{"target_file": "conf.json", "operation": "create", "content": "{\n  \"name\": \"orion\",\n  \"port\": 8080\n}\n"})}
			}
			return action{text: "conf.json is written."}
		}
		m := newFakeModel(t, brain)
		r := runClaude(t, bin, d, m, "Write conf.json.")
		if got := readFile(t, filepath.Join(d.Root, "conf.json")); got != "{\n  \"name\": \"orion\",\n  \"port\": 8080\n}\n" {
			t.Errorf("conf.json: %q", got)
		}
		if r.IsError || r.Result != "conf.json is written." {
			t.Errorf("Claude Code's result: %+v\nmodel log:\n%s", r, m.Log())
		}
		var refused *toolResult
		for i := range seen {
			if seen[i].isError {
				refused = &seen[i]
			}
		}
		if refused == nil || !strings.Contains(refused.text, "Refused, nothing was written") || !strings.Contains(refused.text, "line ") {
			t.Errorf("the refusal as the model saw it: %+v\nmodel log:\n%s", refused, m.Log())
		} else {
			t.Logf("the refusal as the model saw it: %s", refused.text)
		}
	})
}

// checkToolSearch checks that the tools were deferred (the default) and
// offered after the model asked for them.
func checkToolSearch(t *testing.T, m *fakeModel) {
	t.Helper()
	turns := m.Turns()
	if len(turns) < 2 {
		t.Fatalf("%d turns", len(turns))
	}
	first, second := turns[0], turns[1]
	if slices.Contains(first.tools, ccBegin) || !slices.Contains(first.tools, "ToolSearch") {
		t.Errorf("first turn's tools: want ToolSearch and no %s (deferred): %v", ccBegin, first.tools)
	}
	if !slices.Contains(second.tools, ccBegin) && !bytes.Contains(second.body, []byte(`"tool_name":"`+ccBegin+`"`)) {
		t.Errorf("after ToolSearch, %s is not offered: %v", ccBegin, second.tools)
	}
}
