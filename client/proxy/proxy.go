// Package proxy is a local OpenAI- and Anthropic-compatible HTTP proxy that
// gives any agent oriond's write sessions with no change to the agent.
//
// The agent points its base URL at the proxy. On POST /v1/chat/completions
// (OpenAI) and POST /v1/messages (Anthropic) the proxy adds the
// WritePlanTool_begin tool and a short instruction, and when the model calls
// it, runs the whole session loop itself with client/controller: the tool
// result goes back upstream, the text that follows streams into the
// session, the marker finalizes it, and the summary goes back to the model,
// until the model ends a turn without the tool. The agent sees one ordinary
// response: the model's text as it arrives, a short line per written file,
// and its own tool calls. Everything else under /v1/ passes through.
package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/turnmark"
	"github.com/orion-agent/orion/internal/httpguard"
)

// Defaults for Config.
const (
	DefaultListen            = "127.0.0.1:8788"
	DefaultOpenAIUpstream    = "https://api.openai.com/v1"
	DefaultAnthropicUpstream = "https://api.anthropic.com"
	DefaultKeepAlive         = 10 * time.Second
	DefaultMaxRounds         = 32
	// DefaultMaxRequestBytes bounds an agent's request body. The APIs'
	// own limit is 32 MB (Anthropic's Messages API; OpenAI's is lower), so
	// no request the upstream would take is refused: long agent
	// histories with images come close to it.
	DefaultMaxRequestBytes = 36 << 20
	// DefaultMaxConcurrent bounds the requests served at once; more wait
	// (without their bodies being read) up to DefaultQueueWait, then get
	// 429. A person's agents with their subagents stay well below it.
	DefaultMaxConcurrent = 32
	// DefaultQueueWait is how long a request waits for a slot.
	DefaultQueueWait = 30 * time.Second
)

// What a chat request gets when oriond cannot be reached (Config.DaemonDown).
const (
	// DaemonDownError answers at once with 503, x-should-retry: false and
	// a message saying to start oriond: the SDKs and Claude Code show it
	// instead of retrying for minutes.
	DaemonDownError = "error"
	// DaemonDownPass sends the request to the upstream unchanged, with a
	// warning in the log: the agent writes files with its own tools.
	DaemonDownPass = "pass"
)

// Request headers the proxy reads. They are never sent upstream.
const (
	// HeaderBypass "1" passes the request through untouched.
	HeaderBypass = "X-Orion-Bypass"
	// HeaderWorkspace names the workspace root that relative targets
	// resolve against, for this request; oriond's path guard checks it.
	HeaderWorkspace = "X-Orion-Workspace"
)

// Echo modes: what the agent sees of a written file.
const (
	EchoSummary = "summary"
	EchoContent = "content"
)

// Config configures a Proxy.
type Config struct {
	// OpenAIUpstream is the base URL the OpenAI SDKs would use (with /v1):
	// /v1/chat/completions goes to OpenAIUpstream + "/chat/completions".
	OpenAIUpstream string
	// AnthropicUpstream is the base URL the Anthropic SDKs would use
	// (without /v1): /v1/messages goes to AnthropicUpstream + "/v1/messages".
	AnthropicUpstream string
	// GeminiUpstream is the Gemini API's base URL (without /v1beta):
	// /v1beta/models/M:streamGenerateContent goes to GeminiUpstream +
	// that path.
	GeminiUpstream string
	// Socket is oriond's socket ("" means the default).
	Socket string
	// WorkspaceRoot is the default workspace root; HeaderWorkspace
	// overrides it per request. With neither, a chat request is refused
	// (NoWorkspaceMessage).
	WorkspaceRoot string
	// FixedWorkspace keeps every request in WorkspaceRoot: HeaderWorkspace
	// may name it or a directory below it, and a request naming any other
	// is refused (400). For a proxy that serves one project, whose clients
	// (and every program they start) can set headers.
	FixedWorkspace bool
	// Echo is EchoSummary (default: one line per file) or EchoContent (the
	// file in a fenced block, for agents that must keep it in history).
	Echo string
	// KeepAlive is how long a streamed response may stay silent while the
	// inner loop runs before a keep-alive goes out (default 10s).
	KeepAlive time.Duration
	// MaxRounds bounds the upstream requests one agent request makes.
	MaxRounds int
	// IdleMS and AutoFinalizeMS are passed to session.begin (0: the
	// daemon's defaults). Tests shorten them.
	IdleMS         int64
	AutoFinalizeMS int64
	// HTTPClient sends upstream requests (nil: a client with no overall
	// timeout, since responses stream for minutes).
	HTTPClient *http.Client
	// Dial replaces client.Dial (tests).
	Dial func(ctx context.Context, socket string, opts client.Options) (*client.Client, error)
	// Logger receives one line per request; never headers or bodies.
	Logger *slog.Logger

	// AllowHosts and AllowOrigins widen the door (see httpguard.Options):
	// by default only loopback Host names and no Origin at all.
	AllowHosts   []string
	AllowOrigins []string
	// Token, when set, is the secret every request must carry (in the
	// base URL's path as /t/TOKEN, or as a bearer or X-Orion-Token header);
	// a request without it gets 401. Without one, nothing proves a request
	// comes from the person whose files it writes, and a failed edit's
	// errors leave out the lines of the file they would quote.
	Token string
	// MaxRequestBytes bounds a request body (0: DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// MaxConcurrent bounds the requests served at once (0:
	// DefaultMaxConcurrent); QueueWait is how long one waits for a slot
	// before 429 (0: DefaultQueueWait).
	MaxConcurrent int
	QueueWait     time.Duration
	// BodyBudget bounds the request bodies held in memory at once, summed
	// over the requests in flight (0: four times MaxRequestBytes). A
	// request waits for its share like for a slot.
	BodyBudget int64
	// DaemonDown is DaemonDownError (default) or DaemonDownPass.
	DaemonDown string

	// Agent names the agent in the turns the proxy marks (exec: the
	// command); "" takes each request's User-Agent product.
	Agent string
	// TurnIdle ends a turn the proxy never saw end after this long with
	// no request in its workspace (0: turnmark.DefaultIdle).
	TurnIdle time.Duration
	// NoTurns stops the proxy marking turns.
	NoTurns bool
}

// Proxy serves the proxy's endpoints. Create it with New.
type Proxy struct {
	cfg       Config
	openai    *url.URL
	anthropic *url.URL
	gemini    *url.URL
	pass      map[string]*httputil.ReverseProxy
	log       *slog.Logger
	guard     *httpguard.Guard
	slots     chan struct{}
	budget    *budget
	turns     *turnmark.Marker
}

// New checks cfg and returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.OpenAIUpstream == "" {
		cfg.OpenAIUpstream = DefaultOpenAIUpstream
	}
	if cfg.AnthropicUpstream == "" {
		cfg.AnthropicUpstream = DefaultAnthropicUpstream
	}
	if cfg.GeminiUpstream == "" {
		cfg.GeminiUpstream = DefaultGeminiUpstream
	}
	switch cfg.Echo {
	case "":
		cfg.Echo = EchoSummary
	case EchoSummary, EchoContent:
	default:
		return nil, fmt.Errorf("echo %q: use %s or %s", cfg.Echo, EchoSummary, EchoContent)
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.MaxRounds <= 0 {
		cfg.MaxRounds = DefaultMaxRounds
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Dial == nil {
		cfg.Dial = client.Dial
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.BodyBudget <= 0 {
		cfg.BodyBudget = 4 * cfg.MaxRequestBytes
	}
	cfg.BodyBudget = max(cfg.BodyBudget, cfg.MaxRequestBytes)
	switch cfg.DaemonDown {
	case "":
		cfg.DaemonDown = DaemonDownError
	case DaemonDownError, DaemonDownPass:
	default:
		return nil, fmt.Errorf("daemon-down %q: use %s or %s", cfg.DaemonDown, DaemonDownError, DaemonDownPass)
	}
	if cfg.FixedWorkspace && cfg.WorkspaceRoot == "" {
		return nil, fmt.Errorf("a fixed workspace needs a workspace root")
	}
	guard, err := httpguard.New(httpguard.Options{AllowHosts: cfg.AllowHosts, AllowOrigins: cfg.AllowOrigins,
		Token: cfg.Token, JSONOnly: true})
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, pass: map[string]*httputil.ReverseProxy{}, guard: guard,
		slots: make(chan struct{}, cfg.MaxConcurrent), budget: newBudget(cfg.BodyBudget)}
	if p.openai, err = parseUpstream("openai upstream", cfg.OpenAIUpstream); err != nil {
		return nil, err
	}
	if p.anthropic, err = parseUpstream("anthropic upstream", cfg.AnthropicUpstream); err != nil {
		return nil, err
	}
	if p.gemini, err = parseUpstream("gemini upstream", cfg.GeminiUpstream); err != nil {
		return nil, err
	}
	for _, d := range []dialect{openAI{}, anthropic{}, responses{}, gemini{}} {
		p.pass[d.name()] = p.reverseProxy(d)
	}
	p.turns = newMarker(cfg)
	return p, nil
}

// parseUpstream checks an upstream base URL. One with credentials in it
// (https://user:key@host) is refused: they would go with every request
// that reaches the proxy, whoever sent it, and the agent's own key is the
// one to use. The message does not repeat the URL, which holds a secret.
func parseUpstream(what, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err == nil && u.User != nil {
		return nil, fmt.Errorf("%s: the URL carries credentials (user:password@); the proxy does not attach them to every request. "+
			"Remove them from the URL and give the key to the agent the usual way (OPENAI_API_KEY, ANTHROPIC_API_KEY)", what)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an http or https base URL such as %s", what, raw, DefaultOpenAIUpstream)
	}
	return u, nil
}

// upstreamURL maps the agent's path to the upstream: OpenAI base URLs
// carry /v1 themselves, Anthropic's do not.
func (p *Proxy) upstreamURL(d dialect, path string) *url.URL {
	base := p.anthropic
	if d.name() == dialectGemini {
		base = p.gemini
	}
	if d.name() == dialectOpenAI || d.name() == dialectResponses {
		base = p.openai
		path = strings.TrimPrefix(path, "/v1")
	}
	u := *base
	u.Path = base.Path + path
	u.RawPath = ""
	return &u
}

// ServeHTTP checks the request at the door (httpguard: loopback Host, no
// Origin, JSON bodies, the token where one is set), waits for a slot, and
// routes: the two chat endpoints run the session loop, the rest of /v1/
// passes through to the upstream of the API it belongs to. OPTIONS is
// answered here and never forwarded.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	in, ref := p.guard.Check(r)
	if ref != nil && ref.Check == httpguard.CheckToken {
		// Unauthorized, not forbidden: the request may be right once it
		// carries the secret.
		ref.Status = http.StatusUnauthorized
		ref.Message += "; `orionctl proxy --print-env` prints the shared proxy's base URLs with it"
	}
	if ref != nil {
		p.log.Warn("request refused at the door", "check", ref.Check, "method", r.Method, "path", logPath(r.URL.Path),
			"host", r.Host, "origin", r.Header.Get("Origin"), "status", ref.Status)
		ref.Write(rec)
		return
	}
	r = in
	d := dialectOf(r)
	mode := "pass"
	defer func() {
		// Method, path and outcome only: the agent's headers carry its API
		// key and its body the user's code.
		p.log.Info("request", "method", r.Method, "path", r.URL.Path, "api", d.name(), "mode", mode,
			"status", rec.status, "ms", time.Since(start).Milliseconds())
	}()
	if p.guard.CORS(rec, r) {
		// A preflight is the browser asking; the upstream has no say.
		mode = "local"
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/") && !strings.HasPrefix(r.URL.Path, "/v1beta/") {
		writeError(rec, d, http.StatusNotFound, "not_found",
			fmt.Sprintf("orionctl proxy serves /v1/ only, not %s: point your client's base URL at http://%s/v1 (OpenAI) or http://%s (Anthropic)", r.URL.Path, r.Host, r.Host))
		return
	}
	release, ok := p.acquireSlot(rec, r, d)
	if !ok {
		mode = "refused"
		return
	}
	defer release()
	loop := r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/messages" ||
		r.URL.Path == "/v1/responses" || isGeminiChat(r.URL.Path))
	if !loop || r.Header.Get(HeaderBypass) == "1" {
		p.pass[d.name()].ServeHTTP(rec, r)
		return
	}
	mode = "loop"
	if !p.serveLoop(rec, r, d) {
		mode = "pass"
	}
}

// logPath is a path for the log: a token in it is not written down.
func logPath(path string) string {
	if rest, ok := strings.CutPrefix(path, httpguard.TokenPathPrefix); ok {
		_, rest, _ = strings.Cut(rest, "/")
		return httpguard.TokenPathPrefix + "…/" + rest
	}
	return path
}

// acquireSlot waits for one of MaxConcurrent slots, up to QueueWait; the
// body is not read while it waits, so a queue costs no memory. A request
// that finds none gets 429 with retry-after: the SDKs retry it later.
func (p *Proxy) acquireSlot(w http.ResponseWriter, r *http.Request, d dialect) (func(), bool) {
	select {
	case p.slots <- struct{}{}:
		return func() { <-p.slots }, true
	default:
	}
	t := time.NewTimer(p.cfg.QueueWait)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
		return func() { <-p.slots }, true
	case <-r.Context().Done():
		return nil, false
	case <-t.C:
	}
	p.log.Warn("request refused: too many at once", "path", r.URL.Path, "max_concurrent", p.cfg.MaxConcurrent)
	w.Header().Set("Retry-After", "5")
	writeError(w, d, http.StatusTooManyRequests, "rate_limit_error",
		fmt.Sprintf("orionctl proxy is serving %d requests already (--max-concurrent); try again shortly", p.cfg.MaxConcurrent))
	return nil, false
}

// dialectOf says which API a request speaks: the chat endpoints by path,
// the shared ones (/v1/models) by the Anthropic SDK's version header.
func dialectOf(r *http.Request) dialect {
	p := r.URL.Path
	if p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") || p == "/v1/complete" ||
		r.Header.Get("Anthropic-Version") != "" {
		return anthropic{}
	}
	if strings.HasPrefix(p, "/v1beta/") {
		return gemini{}
	}
	if p == "/v1/responses" {
		return responses{}
	}
	return openAI{}
}

// reverseProxy passes requests through unchanged but for the Orion headers,
// streaming the reply as it comes.
func (p *Proxy) reverseProxy(d dialect) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = p.upstreamURL(d, pr.In.URL.Path)
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = ""
			dropOrionHeaders(pr.Out.Header)
		},
		FlushInterval: -1,
		ErrorLog:      nil,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.log.Warn("upstream unreachable", "api", d.name(), "path", r.URL.Path, "err", redactURLError(err))
			writeError(w, d, http.StatusBadGateway, "upstream_unreachable",
				fmt.Sprintf("orionctl proxy could not reach the %s upstream: %v", d.name(), redactURLError(err)))
		},
	}
}

func dropOrionHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Orion-") {
			delete(h, k)
		}
	}
}

// redactURLError keeps an error's cause without the query string of the
// URL, where some providers put keys.
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}

// statusRecorder remembers the status for the log line and keeps
// flushing possible.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	s.wrote = true
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// IsLoopback reports whether a listen address binds only the loopback
// interface: an empty host or 0.0.0.0 binds them all.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
