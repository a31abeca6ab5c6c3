package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// sseStream builds an OpenAI-compatible stream, one delta per chunk.
type sseStream struct{ strings.Builder }

func (s *sseStream) delta(d map[string]any, finish any) {
	b, err := json.Marshal(map[string]any{
		"id": "chatcmpl-gen", "object": "chat.completion.chunk", "model": "deepseek-chat",
		"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(s, "data: %s\n\n", b)
}

func (s *sseStream) done() { s.WriteString("data: [DONE]\n\n") }

// generatedFile is a 2,000-line file of the characters that break JSON
// string arguments and naive chunking: quotes, backslashes, tabs, braces,
// look-alikes of the marker and characters of every UTF-8 length.
func generatedFile(rng *rand.Rand) string {
	words := []string{"alpha", `"quoted"`, `back\slash`, "tab\there", "{", "}", "ünïcödé", "日本語", "🚀",
		"DONE", "__END_WRITE_", "</script>", "a & b", "\\n", "'single'"}
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "%04d", i+1)
		for range rng.IntN(10) {
			b.WriteByte(' ')
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// generatedStream records the two responses of a model writing content:
// the WritePlanTool_begin call with its arguments one character per delta,
// then the content in deltas of one to seven characters, and the marker.
func generatedStream(rng *rand.Rand, target, content string) string {
	var s sseStream
	s.delta(map[string]any{"role": "assistant", "content": ""}, nil)
	s.delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_gen", "type": "function",
		"function": map[string]any{"name": "WritePlanTool_begin", "arguments": ""}}}}, nil)
	args := fmt.Sprintf(`{"intent":"Write a generated file of 2000 lines","target_file":%q,"operation":"create"}`, target)
	for _, r := range args {
		s.delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": string(r)}}}}, nil)
	}
	s.delta(map[string]any{}, "tool_calls")
	s.done()

	s.delta(map[string]any{"role": "assistant", "content": ""}, nil)
	rs := []rune(content)
	for i := 0; i < len(rs); {
		n := min(1+rng.IntN(7), len(rs)-i)
		s.delta(map[string]any{"content": string(rs[i : i+n])}, nil)
		i += n
	}
	s.delta(map[string]any{"content": "{{marker}}\n"}, nil)
	s.delta(map[string]any{"content": "I wrote the file."}, nil)
	s.delta(map[string]any{}, "stop")
	s.done()
	return s.String()
}

// streamEvents runs orionctl stream and decodes its JSON lines.
func streamEvents(t *testing.T, d *testdaemon.Daemon, args ...string) []controller.Event {
	t.Helper()
	code, out, errOut := orionctl(t, d.Socket, "", append([]string{"stream", "--workspace-root", d.Root}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var events []controller.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e controller.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not a JSON event: %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	return events
}

func eventTypes(events []controller.Event) string {
	types := make([]string, len(events))
	for i, e := range events {
		types[i] = e.Type
	}
	return strings.Join(types, " ")
}

// TestStream2000LinesOneCharArguments writes a 2,000-line file through
// orionctl stream from a recorded stream whose tool-call arguments arrive
// one character per delta, and checks the file byte for byte.
func TestStream2000LinesOneCharArguments(t *testing.T) {
	d := testdaemon.Start(t)
	rng := rand.New(rand.NewPCG(2000, 1))
	content := generatedFile(rng)
	stream := filepath.Join(t.TempDir(), "generated.sse")
	if err := os.WriteFile(stream, []byte(generatedStream(rng, "generated.txt", content)), 0o644); err != nil {
		t.Fatal(err)
	}
	events := streamEvents(t, d, "--replay", stream)
	if got, want := eventTypes(events), "tool_result response_end finalized text response_end"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if r := events[2].Result; r.Lines != 2000 || r.Bytes != int64(len(content)) {
		t.Fatalf("summary %+v; want 2000 lines, %d bytes", r, len(content))
	}
	if events[3].Text != "I wrote the file." {
		t.Fatalf("text after the marker %q", events[3].Text)
	}
	got, err := os.ReadFile(filepath.Join(d.Root, "generated.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != content {
		t.Fatalf("file differs: %d bytes, want %d", len(got), len(content))
	}
}

// TestStreamSharedFixture runs a shared fixture through the command and
// checks it writes what the controller suites expect.
func TestStreamSharedFixture(t *testing.T) {
	d := testdaemon.Start(t)
	events := streamEvents(t, d, "--replay", "../../testdata/streams/args_fragments.sse")
	b, err := os.ReadFile("../../testdata/streams/args_fragments.want.json")
	if err != nil {
		t.Fatal(err)
	}
	// The expected events are normalized (see client/controller); the
	// sequence and the files are what this test compares.
	var want struct{ Events []controller.Event }
	var raw struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
		Files map[string]string `json:"files"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, e := range raw.Events {
		want.Events = append(want.Events, controller.Event{Type: e.Type})
	}
	if got, want := eventTypes(events), eventTypes(want.Events); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	for name, content := range raw.Files {
		got, err := os.ReadFile(filepath.Join(d.Root, name))
		if err != nil || string(got) != content {
			t.Fatalf("%s: %q (%v), want %q", name, got, err, content)
		}
	}
}

func TestStreamUsage(t *testing.T) {
	tests := []struct {
		name   string
		socket string
		args   []string
		code   int
		stderr string
	}{
		{"BadPolicy", "/nonexistent.sock", []string{"stream", "--truncation-policy", "drop"}, exitUsage, "--truncation-policy"},
		{"TwoFiles", "/nonexistent.sock", []string{"stream", "a", "b"}, exitUsage, "at most one FILE"},
		{"Unreachable", filepath.Join(t.TempDir(), "none.sock"), []string{"stream"}, exitUnreachable, "not reachable"},
		{"MissingFile", "/nonexistent.sock", []string{"stream", "/nonexistent.sse"}, exitFailure, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := orionctl(t, tt.socket, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tt.code, tt.stderr)
			}
		})
	}
}

// A recorded stream run without --replay stops at once and says why,
// rather than waiting for an auto-finalize that ends its session truncated.
func TestStreamPlaceholderWithoutReplay(t *testing.T) {
	d := testdaemon.Start(t)
	start := time.Now()
	code, _, errOut := orionctl(t, d.Socket, "", "stream", "--workspace-root", d.Root, "../../testdata/streams/marker_split.sse")
	if got, want := errOut, "orionctl: "+errPlaceholder.Error()+"\n"; code != exitFailure || got != want {
		t.Fatalf("exit %d, stderr %q; want exit 1, %q", code, got, want)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("took %v", took)
	}
}

func TestPlaceholderGuardSplitAcrossReads(t *testing.T) {
	in := `data: {"content":"text {{marker}}"}`
	_, err := io.ReadAll(&placeholderGuard{r: iotest.OneByteReader(strings.NewReader(in))})
	if !errors.Is(err, errPlaceholder) {
		t.Fatalf("err %v, want errPlaceholder", err)
	}
	clean := `data: {"content":"{{ not a marker }}"}`
	if b, err := io.ReadAll(&placeholderGuard{r: iotest.OneByteReader(strings.NewReader(clean))}); err != nil || string(b) != clean {
		t.Fatalf("clean input: %q, %v", b, err)
	}
}
