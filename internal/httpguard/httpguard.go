// Package httpguard decides whether an HTTP request may reach one of the
// project's local HTTP doors (the proxy, the local page): only programs
// of this machine, never a web page the person happens to have open.
//
// A page in the person's browser can send requests to 127.0.0.1: a
// cross-origin "simple" request (a form post, text/plain) reaches the
// server even though the page cannot read the reply, and with DNS
// rebinding (the page's own name resolving to 127.0.0.1) it is
// same-origin and may send anything. Each check below closes one of those
// ways in:
//
//   - Host: the Host header must name this machine by loopback (localhost,
//     127.0.0.0/8, ::1) with the port the request arrived on, or a name the
//     person allowed. A rebinding page sends its own name.
//   - Origin: browsers send Origin on every cross-origin request and every
//     POST, and "null" from sandboxed frames and some form posts; agents
//     and SDKs outside a browser send none. A request carrying one is
//     refused unless the person allowed that origin. Sec-Fetch-Site
//     cross-site or same-site (sent by browsers on requests without
//     Origin, such as an image's GET) is refused the same way.
//   - Content type: a request with a body must say application/json, which
//     a page can only send after a CORS preflight the server never grants.
//   - Token: where other users or containers share the loopback, a secret
//     known only to the person's own programs, sent as
//     "Authorization: Bearer SECRET", as "X-Orion-Token: SECRET" or as the
//     first two segments of the path ("/t/SECRET/..."), so that a client
//     that only takes a base URL can carry it, or in an HttpOnly
//     SameSite=Strict cookie the door set when the person opened its URL
//     with the secret (SetCookie). Such a cookie is sent by browsers to
//     every port of the host, so a door whose cookie must not be enough on
//     its own (the local page) keeps secrets of its own and calls
//     CheckWithoutToken.
//     Compared in constant time.
//   - A door whose own page calls it (SameOrigin) also accepts an Origin
//     equal to http:// and the Host the request passed the Host check
//     with: the page's own origin, which no other page can send.
//
// A refused request gets 403 (or 415 for the content type) with a JSON body
// naming the check, in a shape both the OpenAI and the Anthropic SDKs
// read, and "x-should-retry: false" so that they do not retry it.
package httpguard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Checks, as a Refusal names them.
const (
	CheckHost        = "host"
	CheckOrigin      = "origin"
	CheckToken       = "token"
	CheckContentType = "content_type"
)

// HeaderToken carries the secret for clients that can add a header but
// whose Authorization header holds an API key.
const HeaderToken = "X-Orion-Token"

// TokenPathPrefix starts a path that carries the secret: /t/SECRET/rest.
const TokenPathPrefix = "/t/"

// maxAllowed bounds the lists of allowed hosts and origins.
const maxAllowed = 64

// Options says what a Guard lets in beyond loopback requests from
// programs.
type Options struct {
	// AllowHosts are further Host header values accepted: "name" (with the
	// port the request arrived on) or "name:port".
	AllowHosts []string
	// AllowOrigins are origins ("http://localhost:3000") whose requests
	// are served; "null" and "*" are never accepted.
	AllowOrigins []string
	// Token, when not empty, is the secret every request must carry.
	Token string
	// JSONOnly refuses request bodies that are not application/json.
	JSONOnly bool
	// CookieName, when not empty, is the name of a cookie that carries the
	// token as well (see SetCookie); it needs Token.
	CookieName string
	// SameOrigin accepts an Origin that is the request's own: http:// and
	// its (checked) Host. For a door that serves its own page.
	SameOrigin bool
}

// Guard checks requests against Options. The zero value checks Host,
// Origin and Sec-Fetch-Site only.
type Guard struct {
	hosts   map[string]bool
	origins map[string]bool
	token   [sha256.Size]byte
	hasTok  bool
	json    bool
	cookie  string
	same    bool
}

// Refusal says why a request was refused.
type Refusal struct {
	// Status is the HTTP status: 403, or 415 for the content type.
	Status int
	// Check is one of the Check constants.
	Check string
	// Message says what was wrong and what to do, for the person.
	Message string
}

func (r *Refusal) Error() string { return r.Check + ": " + r.Message }

// New checks opts and returns a Guard.
func New(opts Options) (*Guard, error) {
	g := &Guard{hosts: map[string]bool{}, origins: map[string]bool{}, json: opts.JSONOnly, cookie: opts.CookieName, same: opts.SameOrigin}
	if len(opts.AllowHosts) > maxAllowed || len(opts.AllowOrigins) > maxAllowed {
		return nil, fmt.Errorf("at most %d allowed hosts and %d allowed origins", maxAllowed, maxAllowed)
	}
	for _, h := range opts.AllowHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/@ ") || h == "*" {
			return nil, fmt.Errorf("allowed host %q: want a host name, optionally with :port", h)
		}
		g.hosts[h] = true
	}
	for _, o := range opts.AllowOrigins {
		o = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
		if o == "" || o == "null" || o == "*" || (!strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://")) ||
			strings.Contains(strings.SplitN(o, "://", 2)[1], "/") {
			return nil, fmt.Errorf("allowed origin %q: want scheme://host[:port], such as http://localhost:3000 (null and * are never allowed)", o)
		}
		g.origins[o] = true
	}
	if opts.Token != "" {
		if len(opts.Token) < 16 || strings.ContainsAny(opts.Token, "/?#% \t\r\n") {
			return nil, fmt.Errorf("token: want at least 16 characters with no '/', '?', '#', '%%' or space (it travels in a URL path); NewToken makes one")
		}
		g.token, g.hasTok = sha256.Sum256([]byte(opts.Token)), true
	}
	if g.cookie != "" && (!g.hasTok || strings.ContainsAny(g.cookie, "=;, \t\r\n")) {
		return nil, fmt.Errorf("cookie %q: needs a token, and a name without '=', ';', ',' or space", g.cookie)
	}
	return g, nil
}

// NewToken returns a fresh random secret, URL-safe.
func NewToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Check decides on r. On success it returns the request to serve: r with
// the secret taken out of its path and headers, so that it reaches neither
// an upstream nor a log. The request is not modified in place.
func (g *Guard) Check(r *http.Request) (*http.Request, *Refusal) {
	if ref := g.checkHost(r); ref != nil {
		return nil, ref
	}
	if ref := g.checkOrigin(r); ref != nil {
		return nil, ref
	}
	r, ref := g.checkToken(r)
	if ref != nil {
		return nil, ref
	}
	if ref := g.checkContentType(r); ref != nil {
		return nil, ref
	}
	return r, nil
}

// CheckWithoutToken runs every check but the token's: Host, Origin (and
// Sec-Fetch-Site) and content type. It is for a door that authenticates
// requests with secrets of its own (the local page), on a Guard made
// without a Token.
func (g *Guard) CheckWithoutToken(r *http.Request) *Refusal {
	if ref := g.checkHost(r); ref != nil {
		return ref
	}
	if ref := g.checkOrigin(r); ref != nil {
		return ref
	}
	return g.checkContentType(r)
}

func (g *Guard) checkHost(r *http.Request) *Refusal {
	host := strings.ToLower(r.Host)
	if host == "" {
		return &Refusal{http.StatusForbidden, CheckHost, "the request has no Host header"}
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = strings.Trim(host, "[]"), "80"
	}
	local := localPort(r)
	if g.hosts[host] || (port == local && g.hosts[name]) {
		return nil
	}
	if port == local && isLoopbackName(name) {
		return nil
	}
	if port == local && local != "" && name == localIP(r) {
		// The address the request arrived on, as an IP literal: no
		// DNS name, so nothing to rebind.
		return nil
	}
	return &Refusal{http.StatusForbidden, CheckHost, fmt.Sprintf(
		"Host %q is not this machine's loopback address with port %s: a web page rebinding its name to 127.0.0.1 sends its own name. Use http://127.0.0.1:%s, or allow the name with --allow-host",
		r.Host, local, local)}
}

func isLoopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(name)
	return err == nil && a.Unmap().IsLoopback()
}

// localPort is the port the request arrived on, from the server's own
// listener (not from anything the client said).
func localPort(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, p, err := net.SplitHostPort(a.String()); err == nil {
			return p
		}
	}
	return ""
}

func localIP(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if h, _, err := net.SplitHostPort(a.String()); err == nil {
			if ip, err := netip.ParseAddr(h); err == nil && !ip.IsUnspecified() {
				return ip.Unmap().String()
			}
		}
	}
	return ""
}

func (g *Guard) checkOrigin(r *http.Request) *Refusal {
	if o, ok := r.Header["Origin"]; ok {
		origin := ""
		if len(o) > 0 {
			origin = o[0]
		}
		if len(o) == 1 && g.origins[strings.ToLower(strings.TrimSuffix(origin, "/"))] {
			return nil
		}
		// checkHost ran first: r.Host is this machine's, so its origin is
		// the door's own page.
		if len(o) == 1 && g.same && strings.EqualFold(origin, "http://"+r.Host) {
			return nil
		}
		return &Refusal{http.StatusForbidden, CheckOrigin, fmt.Sprintf(
			"requests from web pages are refused (Origin %q): agents and SDKs send no Origin. To serve a page of your own, allow its origin with --allow-origin",
			origin)}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return &Refusal{http.StatusForbidden, CheckOrigin,
			"requests from web pages are refused (Sec-Fetch-Site " + r.Header.Get("Sec-Fetch-Site") + "): agents and SDKs send no such header"}
	}
	return nil
}

// AllowedOrigin reports whether r carries an Origin this guard allows, so
// that a server may answer its preflight and add CORS headers.
func (g *Guard) AllowedOrigin(r *http.Request) (string, bool) {
	o := r.Header.Get("Origin")
	return o, o != "" && g.origins[strings.ToLower(strings.TrimSuffix(o, "/"))]
}

func (g *Guard) checkToken(r *http.Request) (*http.Request, *Refusal) {
	var pathTok, rest string
	after, inPath := strings.CutPrefix(r.URL.Path, TokenPathPrefix)
	if inPath {
		pathTok, rest, _ = strings.Cut(after, "/")
	}
	bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	header := r.Header.Get(HeaderToken)

	if !g.hasTok {
		if inPath || header != "" {
			return nil, &Refusal{http.StatusForbidden, CheckToken, "this server has no token set, yet the request carries one: is the base URL for another server?"}
		}
		return r, nil
	}
	out := r.Clone(r.Context())
	ok := false
	switch {
	case inPath:
		ok = g.matches(pathTok)
		out.URL.Path = "/" + rest
		out.URL.RawPath = ""
		out.RequestURI = ""
	case header != "":
		ok = g.matches(header)
	case hasBearer:
		ok = g.matches(bearer)
		if ok {
			// The secret is the proxy's, not the upstream's key.
			out.Header.Del("Authorization")
		}
	case g.cookie != "":
		if c, err := r.Cookie(g.cookie); err == nil {
			ok = g.matches(c.Value)
		}
	}
	out.Header.Del(HeaderToken)
	if !ok {
		return nil, &Refusal{http.StatusForbidden, CheckToken,
			"this server needs its token: put it in the base URL (http://HOST:PORT/t/TOKEN/...), or send Authorization: Bearer TOKEN or " + HeaderToken + ": TOKEN"}
	}
	return out, nil
}

// SetCookie answers w with the cookie that carries the token for later
// requests: HttpOnly (no script reads it), SameSite=Strict (no other site's
// page makes the browser send it), for the whole door. Call it only for a
// request that Check let in with the token.
func (g *Guard) SetCookie(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// matches compares in constant time: the hashes have one length whatever
// the guess, so neither its content nor its length shows in the timing.
func (g *Guard) matches(s string) bool {
	h := sha256.Sum256([]byte(s))
	return subtle.ConstantTimeCompare(h[:], g.token[:]) == 1
}

func (g *Guard) checkContentType(r *http.Request) *Refusal {
	if !g.json || !hasBody(r) {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	return &Refusal{http.StatusUnsupportedMediaType, CheckContentType, fmt.Sprintf(
		"request bodies must be Content-Type: application/json, not %q", ct)}
}

// hasBody: a server request's ContentLength is 0 only when it has no
// body, -1 when its length is unknown (chunked).
func hasBody(r *http.Request) bool { return r.ContentLength != 0 }

// Body is the JSON a refusal is answered with: Anthropic's error shape,
// whose "error.message" the OpenAI SDKs read too.
func (r *Refusal) Body() []byte {
	typ := "permission_error"
	if r.Status == http.StatusUnauthorized {
		// A door that answers a missing secret with 401 (the proxy) says
		// so the way the APIs do.
		typ = "authentication_error"
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{
		"type": typ, "check": r.Check, "code": "refused_" + r.Check, "message": r.Message}})
	return b
}

// Write answers w with the refusal.
func (r *Refusal) Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Should-Retry", "false")
	w.WriteHeader(r.Status)
	_, _ = w.Write(r.Body())
}

// CORS adds the CORS headers an allowed origin needs, and answers OPTIONS
// (a preflight) itself: it reports whether it did, in which case the
// request must not be served further. Call it on a request Check let in.
func (g *Guard) CORS(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	if o, ok := g.AllowedOrigin(r); ok {
		h.Set("Access-Control-Allow-Origin", o)
		h.Set("Vary", "Origin")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, X-Api-Key, Anthropic-Version, Anthropic-Beta, "+HeaderToken)
			h.Set("Access-Control-Max-Age", "600")
		}
	}
	if r.Method != http.MethodOptions {
		return false
	}
	h.Set("Allow", "GET, POST, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// Handler serves next the requests g lets in, with the secret removed,
// and answers the others itself. OPTIONS requests (CORS preflights) are
// answered here and never reach next: with CORS headers for an allowed
// origin, refused for any other.
func (g *Guard) Handler(next http.Handler, onRefuse func(r *http.Request, ref *Refusal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, ref := g.Check(r)
		if ref != nil {
			if onRefuse != nil {
				onRefuse(r, ref)
			}
			ref.Write(w)
			return
		}
		if g.CORS(w, in) {
			return
		}
		next.ServeHTTP(w, in)
	})
}
