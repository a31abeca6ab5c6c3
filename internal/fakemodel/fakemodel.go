// Package fakemodel is a scripted model upstream for tests that run real
// agent CLIs (Codex CLI on the OpenAI Responses API, Gemini CLI on the
// Gemini API) offline: each request the CLI sends is one turn of a script
// the test writes, answered as a stream in the API's own framing. The
// server keeps every request body, so that a test can check what the CLI
// told its model. It is used by tests only.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// maxBody bounds a request body the model keeps: far more than a CLI
// sends in a turn of these tests.
const maxBody = 64 << 20

// Model is a scripted upstream; use it as an http.Handler (with
// httptest.NewServer). Make one with Responses or Gemini.
type Model struct {
	script func(*Turn)
	// match says which requests are turns; others get a 404 in the API's
	// error shape (notFound).
	match    func(*http.Request) bool
	notFound string
	// list answers a GET (a CLI asking for the models) when not empty.
	list   string
	header func(*Turn)
	footer func(*Turn)

	mu     sync.Mutex
	bodies []string
}

// Turn is one request of the conversation and the stream that answers it.
type Turn struct {
	// N numbers the turns from 1.
	N int
	// Body is the request as the CLI sent it.
	Body string

	w   http.ResponseWriter
	seq int
	// resp is the Responses API response object the turn streams.
	resp map[string]any
}

// Bodies are the requests' bodies so far, in order.
func (m *Model) Bodies() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bodies...)
}

// ServeHTTP answers one request: a turn of the script, a models list, or
// a 404 in the API's shape.
func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if r.Method != http.MethodPost && m.list != "" {
		_, _ = io.WriteString(w, m.list)
		return
	}
	if r.Method != http.MethodPost || !m.match(r) {
		http.Error(w, m.notFound, http.StatusNotFound)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	t := &Turn{N: len(m.bodies), Body: string(body), w: w}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if m.header != nil {
		m.header(t)
	}
	m.script(t)
	if m.footer != nil {
		m.footer(t)
	}
}

// ResponsesModel is the model name the Responses API stream reports.
const ResponsesModel = "orion-test-model"

// Responses is an OpenAI Responses API upstream (POST …/responses): each
// turn's stream is response.created, what script writes with Event, and
// response.completed.
func Responses(script func(*Turn)) *Model {
	return &Model{
		script:   script,
		match:    func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/responses") },
		notFound: `{"error":{"message":"not scripted","type":"invalid_request_error"}}`,
		list:     `{"object":"list","data":[]}`,
		header: func(t *Turn) {
			t.resp = map[string]any{"id": fmt.Sprintf("resp_%d", t.N), "object": "response", "status": "in_progress",
				"model": ResponsesModel, "output": []any{},
				"usage": map[string]int{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
			t.Event(map[string]any{"type": "response.created", "response": t.resp})
		},
		footer: func(t *Turn) {
			t.resp["status"] = "completed"
			t.Event(map[string]any{"type": "response.completed", "response": t.resp})
		},
	}
}

// Event writes one Responses API event; v["type"] names it, and its
// sequence number is added.
func (t *Turn) Event(v map[string]any) {
	v["sequence_number"] = t.seq
	t.seq++
	b, _ := json.Marshal(v)
	fmt.Fprintf(t.w, "event: %s\ndata: %s\n\n", v["type"], b)
}

// Message writes an assistant message item whose text comes in pieces,
// as deltas.
func (t *Turn) Message(pieces ...string) {
	id := fmt.Sprintf("msg_%d", t.N)
	t.Event(map[string]any{"type": "response.output_item.added", "output_index": 0,
		"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
	for _, p := range pieces {
		t.Event(map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": 0, "content_index": 0, "delta": p})
	}
	t.Event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{"type": "message", "id": id,
		"role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": strings.Join(pieces, ""), "annotations": []any{}}}}})
}

// GeminiModel is the model version the Gemini API stream reports.
const GeminiModel = "gemini-2.5-flash"

// Gemini is a Gemini API upstream (POST …:streamGenerateContent): each
// turn's stream is what script writes with Chunk.
func Gemini(script func(*Turn)) *Model {
	return &Model{
		script:   script,
		match:    func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, ":streamGenerateContent") },
		notFound: `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`,
	}
}

// Chunk writes one GenerateContentResponse of the model's parts, with a
// finishReason unless finish is empty, framed with CRLF as Google's
// server does.
func (t *Turn) Chunk(finish string, parts ...any) {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"candidates": []any{cand}, "modelVersion": GeminiModel,
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
	fmt.Fprintf(t.w, "data: %s\r\n\r\n", b)
}

// Table is a file of n lines with quotes and backslashes in each, which
// a JSON or shell layer that mangles them would show.
func Table(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of the table, with \"quotes\" and \\ backslashes\n", i)
	}
	return b.String()
}

// Pieces cuts s into about n pieces of equal size, as a model's text
// deltas come.
func Pieces(s string, n int) []string {
	var out []string
	for c := s; len(c) > 0; {
		k := min(len(c), len(s)/n+1)
		out = append(out, c[:k])
		c = c[k:]
	}
	return out
}

// LineChunks cuts s into chunks of per lines each (the last may be
// shorter).
func LineChunks(s string, per int) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []string
	for i := 0; i < len(lines); i += per {
		out = append(out, strings.Join(lines[i:min(i+per, len(lines))], ""))
	}
	return out
}

// offline are the variables that keep a CLI off the network: every proxy
// points at a closed port, and only loopback is reached directly.
var offline = []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}

// CodexEnv is the whole environment of an offline Codex CLI run: home is
// its HOME and TMPDIR, codexHome its CODEX_HOME.
func CodexEnv(home, codexHome string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "CODEX_HOME=" + codexHome,
		"OPENAI_API_KEY=sk-dummy-codex"}, offline...)
}

// GeminiEnv is the whole environment of an offline Gemini CLI run, with
// extra (such as GOOGLE_GEMINI_BASE_URL) added: home is its HOME and
// TMPDIR.
func GeminiEnv(home string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "GEMINI_API_KEY=dummy-gemini",
		"GEMINI_CLI_NO_RELAUNCH=true"}
	env = append(env, extra...)
	return append(env, offline...)
}

// CodexConfig is the part of Codex CLI's config.toml that keeps a test
// run quiet and failing fast: no analytics, no plugins, no endless
// retries.
const CodexConfig = "[analytics]\nenabled = false\n\n[features]\nplugins = false\nunbounded_connection_retries = false\n"

// CodexHome writes a CODEX_HOME in a temporary directory whose model
// provider is baseURL, speaking the Responses API, quiet as CodexConfig
// keeps it, with extra TOML (such as an [mcp_servers] table) after it.
func CodexHome(t testing.TB, baseURL, extra string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`model = %q
model_provider = "orion"

[model_providers.orion]
name = "orion"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"

%s%s`, ResponsesModel, baseURL, CodexConfig, extra)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// GeminiSettings is Gemini CLI's settings.json for a test run: API-key
// auth, no folder trust prompt, no telemetry or update checks, one
// attempt per request; extra members (such as mcpServers) are added.
func GeminiSettings(extra map[string]any) []byte {
	s := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false}, "telemetry": map[string]any{"enabled": false},
		"general": map[string]any{"enableAutoUpdate": false, "retryFetchErrors": false, "maxAttempts": 1},
	}
	for k, v := range extra {
		s[k] = v
	}
	b, _ := json.Marshal(s)
	return b
}
