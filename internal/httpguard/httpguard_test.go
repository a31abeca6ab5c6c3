package httpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/httpguard"
)

const token = "s3cret-token-0123456789"

// request builds a server-side request as it arrives on 127.0.0.1:8788.
func request(method, target, host string, body string, hdr map[string]string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	r.Host = host
	for k, v := range hdr {
		if v == "<absent>" {
			r.Header.Del(k)
			continue
		}
		r.Header.Set(k, v)
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8788}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
}

func TestCheck(t *testing.T) {
	jsonCT := map[string]string{"Content-Type": "application/json"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"Content-Type": "application/json"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name   string
		opts   httpguard.Options
		req    *http.Request
		check  string // "" means let in
		status int
		// path and auth are what the served request carries.
		path string
		auth string
	}{
		{name: "LoopbackIP", req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", jsonCT), path: "/v1/messages"},
		{name: "Localhost", req: request("POST", "/v1/messages", "localhost:8788", "{}", jsonCT), path: "/v1/messages"},
		{name: "LocalhostUpperCase", req: request("POST", "/v1/messages", "LOCALHOST:8788", "{}", jsonCT), path: "/v1/messages"},
		{name: "IPv6Loopback", req: request("POST", "/v1/messages", "[::1]:8788", "{}", jsonCT), path: "/v1/messages"},
		{name: "OtherLoopbackIP", req: request("GET", "/v1/models", "127.0.0.2:8788", "", nil), path: "/v1/models"},
		{name: "GetWithoutContentType", opts: httpguard.Options{JSONOnly: true}, req: request("GET", "/v1/models", "127.0.0.1:8788", "", nil), path: "/v1/models"},

		{name: "RebindingHost", req: request("POST", "/v1/messages", "evil.example:8788", "{}", jsonCT), check: "host", status: 403},
		{name: "RebindingHostNoPort", req: request("POST", "/v1/messages", "evil.example", "{}", jsonCT), check: "host", status: 403},
		{name: "LoopbackWrongPort", req: request("POST", "/v1/messages", "127.0.0.1:9999", "{}", jsonCT), check: "host", status: 403},
		{name: "LoopbackNoPort", req: request("POST", "/v1/messages", "localhost", "{}", jsonCT), check: "host", status: 403},
		{name: "LocalhostSubdomain", req: request("POST", "/v1/messages", "evil.localhost:8788", "{}", jsonCT), check: "host", status: 403},
		{name: "EmptyHost", req: request("POST", "/v1/messages", "", "{}", jsonCT), check: "host", status: 403},
		{name: "AllowedHost", opts: httpguard.Options{AllowHosts: []string{"devbox.lan"}}, req: request("POST", "/v1/messages", "devbox.lan:8788", "{}", jsonCT), path: "/v1/messages"},
		{name: "AllowedHostOtherPort", opts: httpguard.Options{AllowHosts: []string{"devbox.lan"}}, req: request("POST", "/v1/messages", "devbox.lan:80", "{}", jsonCT), check: "host", status: 403},
		{name: "AllowedHostWithPort", opts: httpguard.Options{AllowHosts: []string{"proxy.internal:443"}}, req: request("POST", "/v1/messages", "proxy.internal:443", "{}", jsonCT), path: "/v1/messages"},

		{name: "CrossOriginJSON", req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", with("Origin", "http://evil.example")), check: "origin", status: 403},
		{name: "NullOrigin", req: request("POST", "/v1/messages", "127.0.0.1:8788", "a=b", map[string]string{"Origin": "null", "Content-Type": "application/x-www-form-urlencoded"}), check: "origin", status: 403},
		{name: "NullOriginEvenIfListed", opts: httpguard.Options{AllowOrigins: []string{"http://localhost:3000"}}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", with("Origin", "null")), check: "origin", status: 403},
		{name: "LoopbackOriginStillRefused", req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", with("Origin", "http://127.0.0.1:8788")), check: "origin", status: 403},
		{name: "AllowedOrigin", opts: httpguard.Options{AllowOrigins: []string{"http://localhost:3000"}}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", with("Origin", "http://localhost:3000")), path: "/v1/messages"},
		{name: "CrossSiteFetch", req: request("GET", "/v1/models", "127.0.0.1:8788", "", map[string]string{"Sec-Fetch-Site": "cross-site"}), check: "origin", status: 403},
		{name: "SameOriginFetchMetadata", req: request("GET", "/v1/models", "127.0.0.1:8788", "", map[string]string{"Sec-Fetch-Site": "none"}), path: "/v1/models"},

		{name: "TextPlain", opts: httpguard.Options{JSONOnly: true}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", map[string]string{"Content-Type": "text/plain"}), check: "content_type", status: 415},
		{name: "FormPost", opts: httpguard.Options{JSONOnly: true}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), check: "content_type", status: 415},
		{name: "NoContentType", opts: httpguard.Options{JSONOnly: true}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", map[string]string{"Content-Type": "<absent>"}), check: "content_type", status: 415},
		{name: "JSONWithCharset", opts: httpguard.Options{JSONOnly: true}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", map[string]string{"Content-Type": "application/json; charset=utf-8"}), path: "/v1/messages"},
		{name: "JSONLookalike", opts: httpguard.Options{JSONOnly: true}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", map[string]string{"Content-Type": "text/plain; application/json"}), check: "content_type", status: 415},

		{name: "TokenMissing", opts: httpguard.Options{Token: token}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", jsonCT), check: "token", status: 403},
		{name: "TokenInPath", opts: httpguard.Options{Token: token}, req: request("POST", "/t/"+token+"/v1/messages?beta=true", "127.0.0.1:8788", "{}", jsonCT), path: "/v1/messages"},
		{name: "TokenInPathWrong", opts: httpguard.Options{Token: token}, req: request("POST", "/t/"+token+"x/v1/messages", "127.0.0.1:8788", "{}", jsonCT), check: "token", status: 403},
		{name: "TokenPrefixOnly", opts: httpguard.Options{Token: token}, req: request("POST", "/t/"+token[:10]+"/v1/messages", "127.0.0.1:8788", "{}", jsonCT), check: "token", status: 403},
		{name: "TokenBearer", opts: httpguard.Options{Token: token}, req: request("POST", "/v1/messages", "127.0.0.1:8788", "{}", with("Authorization", "Bearer "+token)), path: "/v1/messages", auth: ""},
		{name: "TokenBearerIsAPIKey", opts: httpguard.Options{Token: token}, req: request("POST", "/v1/chat/completions", "127.0.0.1:8788", "{}", with("Authorization", "Bearer sk-key")), check: "token", status: 403},
		{name: "TokenPathKeepsAPIKey", opts: httpguard.Options{Token: token}, req: request("POST", "/t/"+token+"/v1/chat/completions", "127.0.0.1:8788", "{}", with("Authorization", "Bearer sk-key")), path: "/v1/chat/completions", auth: "Bearer sk-key"},
		{name: "TokenHeader", opts: httpguard.Options{Token: token}, req: request("POST", "/v1/chat/completions", "127.0.0.1:8788", "{}", with("X-Orion-Token", token, "Authorization", "Bearer sk-key")), path: "/v1/chat/completions", auth: "Bearer sk-key"},
		{name: "TokenHeaderWrong", opts: httpguard.Options{Token: token}, req: request("POST", "/v1/chat/completions", "127.0.0.1:8788", "{}", with("X-Orion-Token", "nope")), check: "token", status: 403},
		{name: "TokenWhereNoneSet", req: request("POST", "/t/"+token+"/v1/messages", "127.0.0.1:8788", "{}", jsonCT), check: "token", status: 403},
		// Host and Origin come first: a page never learns whether its
		// token guess was right.
		{name: "TokenInCookie", opts: httpguard.Options{Token: token, CookieName: "orion_ui"}, req: request("GET", "/api/sessions", "127.0.0.1:8788", "", map[string]string{"Cookie": "orion_ui=" + token}), path: "/api/sessions"},
		{name: "TokenInCookieWrong", opts: httpguard.Options{Token: token, CookieName: "orion_ui"}, req: request("GET", "/api/sessions", "127.0.0.1:8788", "", map[string]string{"Cookie": "orion_ui=" + token + "x"}), check: "token", status: 403},
		{name: "TokenInOtherCookie", opts: httpguard.Options{Token: token, CookieName: "orion_ui"}, req: request("GET", "/api/sessions", "127.0.0.1:8788", "", map[string]string{"Cookie": "other=" + token}), check: "token", status: 403},
		{name: "CookieNotReadWithoutCookieName", opts: httpguard.Options{Token: token}, req: request("GET", "/api/sessions", "127.0.0.1:8788", "", map[string]string{"Cookie": "orion_ui=" + token}), check: "token", status: 403},
		{name: "SameOrigin", opts: httpguard.Options{SameOrigin: true}, req: request("POST", "/api/undo", "127.0.0.1:8788", "{}", with("Origin", "http://127.0.0.1:8788")), path: "/api/undo"},
		{name: "SameOriginOtherPort", opts: httpguard.Options{SameOrigin: true}, req: request("POST", "/api/undo", "127.0.0.1:8788", "{}", with("Origin", "http://127.0.0.1:9999")), check: "origin", status: 403},
		{name: "SameOriginOtherLoopbackName", opts: httpguard.Options{SameOrigin: true}, req: request("POST", "/api/undo", "127.0.0.1:8788", "{}", with("Origin", "http://localhost:8788")), check: "origin", status: 403},
		{name: "SameOriginForeign", opts: httpguard.Options{SameOrigin: true}, req: request("POST", "/api/undo", "127.0.0.1:8788", "{}", with("Origin", "http://evil.example")), check: "origin", status: 403},
		{name: "SameOriginRebound", opts: httpguard.Options{SameOrigin: true}, req: request("POST", "/api/undo", "evil.example:8788", "{}", with("Origin", "http://evil.example:8788")), check: "host", status: 403},
		{name: "TokenRightOriginWrong", opts: httpguard.Options{Token: token}, req: request("POST", "/t/"+token+"/v1/messages", "127.0.0.1:8788", "{}", with("Origin", "http://evil.example")), check: "origin", status: 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := httpguard.New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			served, ref := g.Check(c.req)
			if c.check == "" {
				if ref != nil {
					t.Fatalf("refused (%s): %s", ref.Check, ref.Message)
				}
				if got := served.URL.Path; got != c.path {
					t.Errorf("served path %q, want %q", got, c.path)
				}
				if got := served.Header.Get("Authorization"); got != c.auth {
					t.Errorf("served Authorization %q, want %q", got, c.auth)
				}
				if served.Header.Get("X-Orion-Token") != "" || strings.Contains(served.URL.String(), token) {
					t.Errorf("the secret is still in the served request: %s %v", served.URL, served.Header)
				}
				return
			}
			if ref == nil {
				t.Fatalf("let in, want refused by the %s check", c.check)
			}
			if ref.Check != c.check || ref.Status != c.status {
				t.Errorf("refused by %s with %d (%s), want %s with %d", ref.Check, ref.Status, ref.Message, c.check, c.status)
			}
			if strings.Contains(ref.Message, token) {
				t.Errorf("the refusal repeats the secret: %s", ref.Message)
			}
		})
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, opts := range map[string]httpguard.Options{
		"NullOrigin":     {AllowOrigins: []string{"null"}},
		"StarOrigin":     {AllowOrigins: []string{"*"}},
		"OriginWithPath": {AllowOrigins: []string{"http://x.example/app"}},
		"OriginNoScheme": {AllowOrigins: []string{"x.example"}},
		"StarHost":       {AllowHosts: []string{"*"}},
		"ShortToken":     {Token: "short"},
		"TokenWithSlash": {Token: "abcdefgh/ijklmnopqrs"},
		"CookieNoToken":  {CookieName: "orion_ui"},
		"CookieBadName":  {Token: token, CookieName: "a=b"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := httpguard.New(opts); err == nil {
				t.Errorf("New(%+v) accepted", opts)
			}
		})
	}
}

func TestNewToken(t *testing.T) {
	a, b := httpguard.NewToken(), httpguard.NewToken()
	if a == b || len(a) < 32 {
		t.Fatalf("tokens %q and %q: want distinct, at least 32 characters", a, b)
	}
	if _, err := httpguard.New(httpguard.Options{Token: a}); err != nil {
		t.Fatalf("a generated token is refused: %v", err)
	}
}

// The handler answers refusals and preflights itself: neither reaches the
// server behind it, and a refusal says which check failed in JSON the SDKs
// read, with x-should-retry: false.
func TestHandler(t *testing.T) {
	g, err := httpguard.New(httpguard.Options{JSONOnly: true, AllowOrigins: []string{"http://localhost:3000"}})
	if err != nil {
		t.Fatal(err)
	}
	var reached []string
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method+" "+r.URL.Path)
	}), nil)
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		check  string
		acao   string
	}{
		{"PreflightFromPage", request("OPTIONS", "/v1/messages", "127.0.0.1:8788", "", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}), 403, "origin", ""},
		{"PreflightAllowed", request("OPTIONS", "/v1/messages", "127.0.0.1:8788", "", map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}), 204, "", "http://localhost:3000"},
		{"PreflightNoOrigin", request("OPTIONS", "/v1/messages", "127.0.0.1:8788", "", nil), 204, "", ""},
		{"TextPlain", request("POST", "/v1/messages", "127.0.0.1:8788", "{}", map[string]string{"Content-Type": "text/plain"}), 415, "content_type", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, c.req)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != c.acao {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, c.acao)
			}
			if c.check == "" {
				return
			}
			var body struct {
				Error struct{ Type, Check, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Check != c.check || body.Error.Message == "" {
				t.Errorf("body %s: want JSON naming the %s check (%v)", rec.Body, c.check, err)
			}
			if rec.Header().Get("X-Should-Retry") != "false" {
				t.Errorf("x-should-retry %q, want false", rec.Header().Get("X-Should-Retry"))
			}
		})
	}
	if len(reached) != 0 {
		t.Errorf("reached the server behind the guard: %v", reached)
	}
}

func TestSetCookie(t *testing.T) {
	g, err := httpguard.New(httpguard.Options{Token: token, CookieName: "orion_ui_8788"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	g.SetCookie(rec, token)
	got := rec.Header().Get("Set-Cookie")
	for _, want := range []string{"orion_ui_8788=" + token, "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(got, want) {
			t.Errorf("Set-Cookie %q lacks %q", got, want)
		}
	}
}
