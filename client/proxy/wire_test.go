package proxy

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client/controller"
)

var updateWire = flag.Bool("update", false, "rewrite the golden files in testdata/wire")

// wireDialects are the APIs whose responses the agent's SDKs parse byte by
// byte: framing, keep-alives and error bodies are part of the contract.
var wireDialects = []dialect{anthropic{}, openAI{}, responses{}, gemini{}}

// wireScripts drive a writer through the calls the loop makes.
var wireScripts = []struct {
	name string
	run  func(d dialect, out agentWriter)
}{
	{"turn", func(d dialect, out agentWriter) {
		out.begin(&round{model: "up-model"})
		out.text("hello ")
		out.keepAlive(0)
		out.text("world\n")
		out.toolCalls([]controller.ToolCall{{ID: "call_1", Name: "Bash", Arguments: `{"command":"ls"}`}})
		out.end("stop", map[string]int64{"input_tokens": 7, "output_tokens": 5, "prompt_tokens": 7, "completion_tokens": 5})
	}},
	{"length", func(d dialect, out agentWriter) {
		out.begin(&round{model: "up-model"})
		out.text("cut")
		out.end("length", map[string]int64{})
	}},
	{"fail-before-start", func(d dialect, out agentWriter) {
		out.fail(http.StatusTooManyRequests, d.errorJSON("rate_limit_error", "slow down"))
		out.text("ignored")
	}},
	{"fail-mid-stream", func(d dialect, out agentWriter) {
		out.begin(&round{model: "up-model"})
		out.text("partial")
		out.fail(http.StatusBadGateway, d.errorJSON("upstream_error", "the upstream went away"))
		out.text("ignored")
	}},
	{"fail-mid-stream-raw", func(d dialect, out agentWriter) {
		out.begin(&round{model: "up-model"})
		out.text("partial")
		out.fail(http.StatusInternalServerError, []byte("plain text, not JSON"))
	}},
	{"overflow", func(d dialect, out agentWriter) {
		out.begin(&round{model: "up-model"})
		out.text(strings.Repeat("x", 16))
		switch w := out.(type) {
		case *anthropicWriter:
			w.overflow = true
		case *openAIWriter:
			w.overflow = true
		case *responsesWriter:
			w.overflow = true
		case *geminiWriter:
			w.overflow = true
		}
		out.end("stop", map[string]int64{})
	}},
}

// randomIDs are the ids the writers make up; the goldens number them in
// order of appearance instead.
var randomIDs = regexp.MustCompile(`(msg_orion_|chatcmpl-orion-|resp_orion_|fc_orion_)[0-9a-f]{32}`)

func wireRecord(rec *httptest.ResponseRecorder) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d\n", rec.Code)
	for _, k := range []string{"Content-Type", "Cache-Control", "X-Accel-Buffering"} {
		if v := rec.Header().Get(k); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	seen := map[string]string{}
	b.WriteString(randomIDs.ReplaceAllStringFunc(rec.Body.String(), func(id string) string {
		if s, ok := seen[id]; ok {
			return s
		}
		s := fmt.Sprintf("%sID%d", randomIDs.FindStringSubmatch(id)[1], len(seen)+1)
		seen[id] = s
		return s
	}))
	return b.String()
}

// TestWireGolden pins what each API's writer puts on the wire, byte for
// byte (CRLF included), for a streamed and an unstreamed turn and for
// errors before and after the response began.
func TestWireGolden(t *testing.T) {
	for _, d := range wireDialects {
		for _, stream := range []bool{true, false} {
			for _, sc := range wireScripts {
				mode := "stream"
				if !stream {
					mode = "whole"
				}
				name := d.name() + "-" + mode + "-" + sc.name
				t.Run(name, func(t *testing.T) {
					rec := httptest.NewRecorder()
					out := d.newWriter(rec, &agentRequest{model: "agent-model", stream: stream, includeUsage: true})
					switch w := out.(type) {
					case *openAIWriter:
						w.created = 1700000000
					case *responsesWriter:
						w.created = 1700000000
					}
					sc.run(d, out)
					checkWireGolden(t, name, wireRecord(rec))
				})
			}
		}
		t.Run(d.name()+"-writeError", func(t *testing.T) {
			var b strings.Builder
			for _, kind := range []string{"invalid_request_error", "not_found", "request_too_large", "rate_limit_error",
				"oriond_unreachable", "upstream_unreachable", "upstream_error", "api_error"} {
				rec := httptest.NewRecorder()
				writeError(rec, d, http.StatusTeapot, kind, "what went wrong: "+kind)
				b.WriteString(wireRecord(rec))
				b.WriteString("\n---\n")
			}
			checkWireGolden(t, d.name()+"-writeError", b.String())
		})
	}
}

func checkWireGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "wire", name+".golden")
	if *updateWire {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: the wire changed\n got: %q\nwant: %q", name, got, want)
	}
}

// BenchmarkStreamText is the writer's cost per text delta of a streamed
// reply, framing and flush included, for each API.
func BenchmarkStreamText(b *testing.B) {
	for _, d := range wireDialects {
		b.Run(d.name(), func(b *testing.B) {
			rec := httptest.NewRecorder()
			out := d.newWriter(rec, &agentRequest{model: "agent-model", stream: true})
			out.begin(&round{model: "up-model"})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				out.text("a delta of some twenty bytes ")
				if i%1024 == 0 {
					rec.Body.Reset()
				}
			}
		})
	}
}
