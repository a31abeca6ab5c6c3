package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
)

// --daemon-down pass: with oriond down, the agent's request goes to the
// upstream as it came (no tool added), and the log says so.
func TestDaemonDownPass(t *testing.T) {
	h := newHarness(t, proxy.Config{DaemonDown: proxy.DaemonDownPass, Socket: "/nonexistent/oriond.sock"},
		oaReply(oaText("from upstream"), oaFinish("stop")))
	status, body := h.post(t, "/v1/chat/completions", chatRequest(true, "hi"), nil)
	if status != 200 || !strings.Contains(body, "from upstream") {
		t.Fatalf("status %d: %s", status, body)
	}
	reqs := h.up.all()
	if len(reqs) != 1 || strings.Contains(string(reqs[0].body), "WritePlanTool_begin") {
		t.Errorf("the upstream got %d requests, the first with the tool added: %v", len(reqs), len(reqs) > 0)
	}
	if !strings.Contains(h.logs.String(), "level=WARN") || !strings.Contains(h.logs.String(), "oriond is down") {
		t.Errorf("no warning in the log:\n%s", h.logs.String())
	}
}

// A chat request that names no workspace, on a proxy with no default one,
// is refused with what to do: files must not land where the proxy was
// started. With the header, the same request is served.
func TestNoWorkspaceRefused(t *testing.T) {
	h := newHarness(t, proxy.Config{},
		oaReply(oaText("hello"), oaFinish("stop")))
	p, err := proxy.New(proxy.Config{OpenAIUpstream: h.up.srv.URL + "/v1", Socket: h.d.Socket})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	post := func(hdr map[string]string) (int, string, http.Header) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(js(chatRequest(false, "hi"))))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	status, body, hdr := post(nil)
	if status != 400 || !strings.Contains(body, proxy.HeaderWorkspace) || !strings.Contains(body, "orionctl exec") || hdr.Get("X-Should-Retry") != "false" {
		t.Errorf("without a workspace: %d %s %v", status, body, hdr)
	}
	if n := len(h.up.all()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	if status, body, _ := post(map[string]string{proxy.HeaderWorkspace: h.d.Root}); status != 200 || !strings.Contains(body, "hello") {
		t.Errorf("with the header: %d %s", status, body)
	}
}

// The door in front of the loop: a page's preflight is answered by the
// proxy and never forwarded; a body over the limit gets 413; requests
// beyond --max-concurrent wait, then get 429 with Retry-After.
func TestDoor(t *testing.T) {
	t.Run("PreflightNotForwarded", func(t *testing.T) {
		h := newHarness(t, proxy.Config{})
		req, _ := http.NewRequest("OPTIONS", h.srv.URL+"/v1/chat/completions", nil)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "" || len(h.up.all()) != 0 {
			t.Errorf("status %d, ACAO %q, %d upstream requests", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), len(h.up.all()))
		}
	})
	t.Run("AllowedOrigin", func(t *testing.T) {
		h := newHarness(t, proxy.Config{AllowOrigins: []string{"http://localhost:3000"}},
			oaReply(oaText("hi page"), oaFinish("stop")))
		req, _ := http.NewRequest("OPTIONS", h.srv.URL+"/v1/chat/completions", nil)
		req.Header.Set("Origin", "http://localhost:3000")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
		}
		status, body := h.post(t, "/v1/chat/completions", chatRequest(false, "hi"), map[string]string{"Origin": "http://localhost:3000"})
		if status != 200 || !strings.Contains(body, "hi page") {
			t.Errorf("post from the allowed page: %d %s", status, body)
		}
		if status, _ := h.post(t, "/v1/chat/completions", chatRequest(false, "hi"), map[string]string{"Origin": "http://localhost:3001"}); status != 403 {
			t.Errorf("post from another page: %d", status)
		}
	})
	t.Run("BodyTooLarge", func(t *testing.T) {
		h := newHarness(t, proxy.Config{MaxRequestBytes: 1 << 20})
		status, body := h.post(t, "/v1/messages", map[string]any{"model": "m", "max_tokens": 10,
			"messages": []any{map[string]string{"role": "user", "content": strings.Repeat("x", 2<<20)}}}, nil)
		var e struct {
			Error struct{ Type, Message string }
		}
		_ = json.Unmarshal([]byte(body), &e)
		if status != 413 || e.Error.Type != "request_too_large" || len(h.up.all()) != 0 {
			t.Errorf("status %d %s", status, body)
		}
		// The same body of unknown length (chunked): read up to the limit.
		big := js(map[string]any{"model": "m", "messages": []any{map[string]string{"role": "user", "content": strings.Repeat("x", 2<<20)}}})
		req, _ := http.NewRequest("POST", h.srv.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(big)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 || req.ContentLength != 0 || len(h.up.all()) != 0 {
			t.Errorf("chunked: status %d (sent with length %d)", resp.StatusCode, req.ContentLength)
		}
	})
	t.Run("TooManyAtOnce", func(t *testing.T) {
		h := newHarness(t, proxy.Config{MaxConcurrent: 1, QueueWait: 300 * time.Millisecond},
			oaReply(pause(2*time.Second), oaText("slow"), oaFinish("stop")),
			oaReply(oaText("second"), oaFinish("stop")))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, _ := h.post(t, "/v1/chat/completions", chatRequest(false, "first"), nil); status != 200 {
				t.Errorf("first: status %d", status)
			}
		}()
		// The first holds the one slot once it reached the upstream.
		for deadline := time.Now().Add(30 * time.Second); len(h.up.all()) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the first request never reached the upstream")
			}
		}
		req, _ := http.NewRequest("POST", h.srv.URL+"/v1/chat/completions", strings.NewReader(js(chatRequest(false, "second"))))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("second: status %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		wg.Wait()
	})
}
