package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/agentcli"
	"github.com/orion-agent/orion/internal/claudecode"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// toolModel is an Anthropic upstream whose model works through Claude
// Code's own tools, never Orion's: one tool call per answer, chosen by
// how many tool results the conversation holds, then a last word that
// hands back to the person.
type toolModel struct {
	steps [][2]string // tool name, input JSON
}

func (m *toolModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		io.WriteString(w, `{"input_tokens":1000}`)
		return
	}
	var req struct {
		Tools    []struct{ Name string }
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	_ = json.Unmarshal(body, &req)
	if !slices.ContainsFunc(req.Tools, func(t struct{ Name string }) bool { return t.Name == "Bash" }) {
		anthropicStream(w, "end_turn", "Side reply.", "", "")
		return
	}
	results := strings.Count(string(body), `"type":"tool_result"`)
	if results >= len(m.steps) {
		anthropicStream(w, "end_turn", "Done.", "", "")
		return
	}
	s := m.steps[results]
	// Each call its own id: Claude Code matches results to calls by it.
	var out bytes.Buffer
	anthropicStream(&idWriter{w: w, out: &out}, "tool_use", "", s[0], s[1])
	w.Write(bytes.ReplaceAll(out.Bytes(), []byte(`"toolu_1"`), []byte(fmt.Sprintf(`"toolu_%d"`, results+1))))
}

// idWriter captures a stream so its tool id can be changed before it is
// sent.
type idWriter struct {
	w   http.ResponseWriter
	out *bytes.Buffer
}

func (i *idWriter) Header() http.Header         { return i.w.Header() }
func (i *idWriter) Write(b []byte) (int, error) { return i.out.Write(b) }
func (i *idWriter) WriteHeader(code int)        { i.w.WriteHeader(code) }

// Claude Code under orionctl exec changes files in one turn with its own
// Write, Edit and Bash tools (sed -i, rm, mv), none of it through Orion;
// exec marks the turn by itself, orionctl undo --turn last puts every
// file back byte-exact, and orionctl redo brings the turn back.
func TestExecClaudeCodeTurnUndo(t *testing.T) {
	claude, version := claudecode.Install(t)
	bin := testdaemon.Orionctl(t)
	d := testdaemon.Start(t)
	project := filepath.Join(d.Root, "proj")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{
		"edit.txt": "alpha\nbeta\n",
		"sed.txt":  "one two\nthree\n",
		"gone.txt": "to be removed\n",
		"old.txt":  "to be moved\n",
	}
	for name, c := range before {
		if err := os.WriteFile(filepath.Join(project, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string { return filepath.Join(project, name) }
	in := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	model := &toolModel{steps: [][2]string{
		{"Write", in(map[string]string{"file_path": at("new.txt"), "content": "made by Write\n"})},
		{"Read", in(map[string]string{"file_path": at("edit.txt")})},
		{"Edit", in(map[string]string{"file_path": at("edit.txt"), "old_string": "alpha", "new_string": "ALPHA"})},
		{"Bash", in(map[string]string{"command": "sed -i 's/two/TWO/' sed.txt && rm gone.txt && mv old.txt moved.txt", "description": "shell edits"})},
	}}
	up := httptest.NewServer(model)
	defer up.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--socket", d.Socket, "exec", "--log-level", "debug", "--anthropic-upstream", up.URL, "--",
		claude, "-p", "Tidy the project.", "--output-format", "json", "--allowedTools", "Write Edit Read Bash")
	cmd.Dir = project
	cmd.Env = claudecode.Env(t.TempDir(), "")
	out, errb := agentcli.Run(t, cmd, "orionctl exec -- claude (Claude Code "+version+")")
	after := map[string]string{
		"new.txt":   "made by Write\n",
		"edit.txt":  "ALPHA\nbeta\n",
		"sed.txt":   "one TWO\nthree\n",
		"moved.txt": "to be moved\n",
	}
	check := func(when string, want map[string]string, gone ...string) {
		t.Helper()
		for name, c := range want {
			if got, err := os.ReadFile(at(name)); err != nil || string(got) != c {
				t.Errorf("%s: %s is %q (%v), want %q", when, name, got, err, c)
			}
		}
		for _, name := range gone {
			if _, err := os.Lstat(at(name)); err == nil {
				t.Errorf("%s: %s exists, want it gone", when, name)
			}
		}
	}
	check("after Claude Code's turn", after, "gone.txt", "old.txt")
	if t.Failed() {
		t.Fatalf("Claude Code did not do the turn's work\nstdout %s\nstderr %s", out, errb)
	}

	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, append([]string{"--socket", d.Socket}, args...)...)
		c.Dir = project
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("orionctl %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	var list struct {
		Turns []struct {
			Agent string
			State string
			Files []struct{ Path, Kind, Writer string }
		}
	}
	if err := json.Unmarshal([]byte(run("turns", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Turns) != 1 || list.Turns[0].Agent != filepath.Base(claude) || list.Turns[0].State != "ended" {
		t.Fatalf("turns %+v, want one ended turn of %s\nexec's log: %s", list.Turns, filepath.Base(claude), errb)
	}
	t.Logf("the turn's files: %+v", list.Turns[0].Files)

	t.Log(run("undo", "--turn", "last"))
	check("after undo --turn last", before, "new.txt", "moved.txt")
	t.Log(run("redo"))
	check("after redo", after, "gone.txt", "old.txt")
}
