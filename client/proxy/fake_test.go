package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// part is one piece of a scripted reply: raw bytes to send, after a pause.
type part struct {
	raw   string
	pause time.Duration
	// do runs at this point of the reply, after everything before it was
	// flushed (the daemon-kill test restarts oriond here).
	do func()
}

// reply is one scripted upstream response: a stream of parts, or an error
// status with a body.
type reply struct {
	status int
	body   string
	parts  []part
}

// fakeUpstream plays a script, one reply per request, and records what
// each request carried. Placeholders {{mN}} and {{mN:FROM:TO}} in a part
// stand for the Nth end marker the conversation has been given (in the
// order they first appear in the request), or a byte slice of it, so a
// script can split a marker across deltas anywhere.
type fakeUpstream struct {
	t      *testing.T
	mu     sync.Mutex
	script []reply
	bodies [][]byte
	hdrs   []http.Header
	paths  []string
	srv    *httptest.Server
	// side, when set, answers the requests it claims (an agent's own side
	// requests, such as token counting) without taking a scripted reply.
	side func(path string, body []byte) (reply, bool)
}

func newFakeUpstream(t *testing.T, script ...reply) *fakeUpstream {
	f := &fakeUpstream{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

var (
	markerRE      = regexp.MustCompile(`__END_WRITE_[0-9a-f]+__`)
	placeholderRE = regexp.MustCompile(`\{\{m(\d+)(?::(\d*):(\d*))?\}\}`)
)

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.hdrs = append(f.hdrs, r.Header.Clone())
	f.paths = append(f.paths, r.URL.Path)
	if r.Method != http.MethodPost {
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
		return
	}
	if f.side != nil {
		if rep, ok := f.side(r.URL.Path, body); ok {
			f.mu.Unlock()
			f.play(w, r, rep, nil)
			return
		}
	}
	if len(f.script) == 0 {
		f.mu.Unlock()
		f.t.Errorf("upstream: request %d has no scripted reply", len(f.bodies))
		http.Error(w, `{"error":{"message":"script ended"}}`, http.StatusInternalServerError)
		return
	}
	rep := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()

	var markers []string
	for _, m := range markerRE.FindAllString(string(body), -1) {
		if !contains(markers, m) {
			markers = append(markers, m)
		}
	}
	f.play(w, r, rep, markers)
}

// play writes one reply: its status and body, or its parts in order.
func (f *fakeUpstream) play(w http.ResponseWriter, r *http.Request, rep reply, markers []string) {
	if rep.status != 0 && rep.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, p := range rep.parts {
		if p.pause > 0 {
			fl.Flush()
			select {
			case <-time.After(p.pause):
			case <-r.Context().Done():
				return
			}
		}
		if p.do != nil {
			fl.Flush()
			p.do()
		}
		io.WriteString(w, substitute(p.raw, markers))
	}
	fl.Flush()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// substitute fills the marker placeholders; a JSON-escaped form is not
// needed, markers are plain ASCII.
func substitute(s string, markers []string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[1])
		if n >= len(markers) {
			return "MISSING_MARKER"
		}
		mk := markers[n]
		if sub[2] == "" && sub[3] == "" && !strings.Contains(m, ":") {
			return mk
		}
		from, to := 0, len(mk)
		if sub[2] != "" {
			from, _ = strconv.Atoi(sub[2])
		}
		if sub[3] != "" {
			to, _ = strconv.Atoi(sub[3])
		}
		return mk[min(from, len(mk)):min(to, len(mk))]
	})
}

// setSide sets side under the lock: the race detector sees no order
// between the test and a request that came through another process.
func (f *fakeUpstream) setSide(side func(path string, body []byte) (reply, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.side = side
}

// upstreamRequest is what one request to the fake upstream carried.
type upstreamRequest struct {
	path   string
	header http.Header
	body   []byte
}

// all returns every request so far, under the lock.
func (f *fakeUpstream) all() []upstreamRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]upstreamRequest, len(f.bodies))
	for i := range f.bodies {
		out[i] = upstreamRequest{path: f.paths[i], header: f.hdrs[i], body: f.bodies[i]}
	}
	return out
}

func (f *fakeUpstream) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

// OpenAI stream parts.

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func oaData(v any) part { return part{raw: "data: " + js(v) + "\n\n"} }

func oaText(s string) part {
	return oaData(map[string]any{"id": "chatcmpl-fake", "model": "fake-model",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}, "finish_reason": nil}}})
}

func oaCall(index int, id, name, args string) part {
	fn := map[string]any{"arguments": args}
	call := map[string]any{"index": index, "function": fn}
	if id != "" {
		call["id"], call["type"], fn["name"] = id, "function", name
	}
	return oaData(map[string]any{"id": "chatcmpl-fake", "model": "fake-model",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{call}}, "finish_reason": nil}}})
}

func oaFinish(reason string) part {
	return oaData(map[string]any{"id": "chatcmpl-fake", "model": "fake-model",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason}}})
}

func oaUsage(prompt, completion int) part {
	return oaData(map[string]any{"id": "chatcmpl-fake", "model": "fake-model", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
}

func oaDone() part { return part{raw: "data: [DONE]\n\n"} }

func pause(d time.Duration) part { return part{pause: d} }

// oaReply is a whole response: parts, then usage and [DONE].
func oaReply(parts ...part) reply {
	return reply{parts: append(parts, oaUsage(10, 5), oaDone())}
}

// Anthropic stream parts.

func anEvent(name string, v any) part {
	return part{raw: "event: " + name + "\ndata: " + js(v) + "\n\n"}
}

func anReply(stop string, blocks ...[]part) reply {
	parts := []part{anEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake", "content": []any{},
		"stop_reason": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})}
	parts = append(parts, anEvent("ping", map[string]string{"type": "ping"}))
	for _, b := range blocks {
		parts = append(parts, b...)
	}
	parts = append(parts,
		anEvent("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": 5}}),
		anEvent("message_stop", map[string]string{"type": "message_stop"}))
	return reply{parts: parts}
}

// anText is a text block at index i, one delta per piece (pieces may be
// pauses).
func anText(i int, pieces ...any) []part {
	ps := []part{anEvent("content_block_start", map[string]any{"type": "content_block_start", "index": i,
		"content_block": map[string]string{"type": "text", "text": ""}})}
	for _, p := range pieces {
		switch p := p.(type) {
		case string:
			ps = append(ps, anEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]string{"type": "text_delta", "text": p}}))
		case part:
			ps = append(ps, p)
		}
	}
	return append(ps, anEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}))
}

// anTool is a tool_use block at index i whose input arrives in fragments.
func anTool(i int, id, name string, fragments ...string) []part {
	ps := []part{anEvent("content_block_start", map[string]any{"type": "content_block_start", "index": i,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})}
	for _, f := range fragments {
		ps = append(ps, anEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
			"delta": map[string]string{"type": "input_json_delta", "partial_json": f}}))
	}
	return append(ps, anEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}))
}

// harness is a daemon, a fake upstream and the proxy in front of them.
type harness struct {
	d    *testdaemon.Daemon
	up   *fakeUpstream
	srv  *httptest.Server
	logs *syncBuffer
	// base is the proxy's base URL: the server's, with the token's path
	// when the proxy has one.
	base string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, cfg proxy.Config, script ...reply) *harness {
	t.Helper()
	h := &harness{d: testdaemon.Start(t), logs: &syncBuffer{}}
	h.up = newFakeUpstream(t, script...)
	cfg.OpenAIUpstream = h.up.srv.URL + "/v1"
	cfg.AnthropicUpstream = h.up.srv.URL
	cfg.GeminiUpstream = h.up.srv.URL
	if cfg.Socket == "" {
		cfg.Socket = h.d.Socket
	}
	cfg.WorkspaceRoot = h.d.Root
	if cfg.IdleMS == 0 {
		cfg.IdleMS = 800
	}
	if cfg.AutoFinalizeMS == 0 {
		cfg.AutoFinalizeMS = 8000
	}
	cfg.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(p)
	t.Cleanup(h.srv.Close)
	h.base = h.srv.URL
	if cfg.Token != "" {
		h.base += "/t/" + cfg.Token
	}
	return h
}

// post sends a request to the proxy and returns the status and the body.
// requests counts the proxy's log lines for requests to path answered
// with status: what the agent sent, retries included.
func (h *harness) requests(path string, status int) int {
	n := 0
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, "msg=request ") && strings.Contains(line, " path="+path+" ") &&
			strings.Contains(line, fmt.Sprintf(" status=%d ", status)) {
			n++
		}
	}
	return n
}

func (h *harness) post(t *testing.T, path string, body any, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(js(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test-SECRETKEY")
	req.Header.Set("X-Api-Key", "sk-ant-SECRETKEY")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseEvents splits a stream into its data payloads.
func sseEvents(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}
