// Package ui is `orionctl ui`: a page on loopback where a person watches
// what agents write through oriond and takes it back. It is a client of
// the daemon like any other: it follows the daemon's trace events, asks
// about the sessions they name (at most once a second), and turns the
// page's actions into the daemon's own requests, answering with the
// daemon's own messages. It holds no session logic.
//
// Access: the URL it prints carries a one-time token, exchanged at the
// first request for an HttpOnly SameSite=Strict cookie and a page key the
// tab keeps in memory (see access); every /api request must carry both,
// name this machine by loopback in Host, and send no Origin or the page's
// own (internal/httpguard). Actions are POST with a JSON body. No CORS
// header is ever sent, so a page elsewhere in the browser can neither read
// the page nor act through it.
package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/httpguard"
)

//go:embed static
var static embed.FS

// DefaultListen is where the page is served unless told otherwise: a
// loopback port the system picks.
const DefaultListen = "127.0.0.1:0"

// Config configures a Server.
type Config struct {
	// Socket is oriond's socket ("" means client.DefaultSocket).
	Socket string
	// Listen is a loopback host:port (DefaultListen when empty).
	Listen string
	// Token is the printed URL's one-time secret; empty makes a random
	// one.
	Token  string
	Logger *slog.Logger
}

// Server serves the page.
type Server struct {
	cfg   Config
	ln    net.Listener
	guard *httpguard.Guard
	acc   *access
	hub   *hub
	log   *slog.Logger
}

// New checks cfg and listens. The listen address must be loopback: the
// page shows and undoes what was written on this machine.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Socket == "" {
		cfg.Socket = client.DefaultSocket()
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want host:port, such as %s", cfg.Listen, DefaultListen)
	}
	if a, err := netip.ParseAddr(host); host != "localhost" && (err != nil || !a.IsLoopback()) {
		return nil, fmt.Errorf("--listen %q: the page serves loopback only (127.0.0.1, ::1 or localhost)", cfg.Listen)
	}
	if cfg.Token == "" {
		cfg.Token = httpguard.NewToken()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// The guard checks Host, Origin and content type; the secrets are
	// the page's own (access).
	g, err := httpguard.New(httpguard.Options{SameOrigin: true, JSONOnly: true})
	if err != nil {
		ln.Close()
		return nil, err
	}
	// Cookies are not kept apart by port: the name carries it, so two
	// pages of two daemons never take each other's.
	acc := newAccess("orion_ui_" + port)
	acc.addLink(cfg.Token)
	return &Server{cfg: cfg, ln: ln, guard: g, acc: acc, hub: newHub(cfg.Socket, cfg.Logger), log: cfg.Logger}, nil
}

// URL is the address to print: it carries the one-time token, which the
// first request exchanges for the page's cookie and key. Once used it
// opens nothing; NewLink makes another.
func (s *Server) URL() string { return s.link(s.cfg.Token) }

// NewLink returns a fresh one-time URL of the page (for the browser
// `orionctl ui` opens, and for the page's "new tab").
func (s *Server) NewLink() string { return s.link(s.acc.newLink()) }

func (s *Server) link(tok string) string {
	return "http://" + s.ln.Addr().String() + httpguard.TokenPathPrefix + tok + "/"
}

// Addr is the address the page is served on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Socket is the daemon's socket the page follows.
func (s *Server) Socket() string { return s.cfg.Socket }

// Serve serves until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.hub.run(ctx)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler is the page with its guard in front.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/"
		files.ServeHTTP(w, r2)
	})
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("GET /api/sessions", s.sessions)
	mux.HandleFunc("GET /api/session", s.session)
	mux.HandleFunc("GET /api/session/content", s.content)
	mux.HandleFunc("GET /api/session/diff", s.diff)
	mux.HandleFunc("GET /api/trace/logs", s.traceLogs)
	mux.HandleFunc("POST /api/undo", s.undo)
	mux.HandleFunc("POST /api/abort", s.abort)
	mux.HandleFunc("POST /api/finalize", s.finalize)
	mux.HandleFunc("POST /api/link", s.newLink)
	mux.HandleFunc("GET /api/turns", s.turns)
	mux.HandleFunc("GET /api/turns/workspaces", s.turnWorkspaces)
	mux.HandleFunc("GET /api/turn", s.turn)
	mux.HandleFunc("POST /api/turn/undo", s.turnUndo)
	mux.HandleFunc("POST /api/turn/redo", s.turnRedo)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		checked := r
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, httpguard.TokenPathPrefix) {
			// A link may come from anywhere the person keeps it: the
			// terminal, or the file orionctl ui opens the browser on,
			// whose navigation is cross-site (file:// to http://). Its
			// token is the proof; the Host check (DNS rebinding) stays.
			checked = r.Clone(r.Context())
			checked.Header.Del("Origin")
			checked.Header.Del("Sec-Fetch-Site")
		}
		if ref := s.guard.CheckWithoutToken(checked); ref != nil {
			s.log.Warn("refused a request", "check", ref.Check, "method", r.Method, "path", redact(r.URL.Path))
			ref.Write(w)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			writeJSON(w, http.StatusMethodNotAllowed, apiError{Message: "only GET and POST"})
			return
		}
		if after, ok := strings.CutPrefix(r.URL.Path, httpguard.TokenPathPrefix); ok {
			s.exchange(w, r, after)
			return
		}
		if !s.acc.hasCookie(r) {
			s.log.Warn("refused a request", "check", "cookie", "method", r.Method, "path", r.URL.Path)
			if !strings.HasPrefix(r.URL.Path, "/api/") {
				refusePage(w, "This page needs a link of orionctl ui",
					"Open the address orionctl ui printed (each address opens one tab, once), or use New tab on a tab of the page that is still open. To get a new address, run orionctl ui again.")
				return
			}
			refuse(w, "this page needs a link from orionctl ui: open the URL it printed (each link opens one tab), or use \"new tab\" on a tab of the page that is open")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && !s.acc.hasKey(r) {
			// The cookie alone is what any listener on another port of
			// 127.0.0.1 receives from the browser: never enough.
			s.log.Warn("refused a request", "check", "page_key", "method", r.Method, "path", r.URL.Path)
			refuse(w, "this request has the page's cookie but not its page key ("+HeaderPageKey+"): open the page from a link of orionctl ui")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// exchange answers a link: an unused token becomes the cookie and a page
// key, and the address bar loses the token. The key travels in the
// fragment, which the browser keeps to itself.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request, after string) {
	tok, rest, _ := strings.Cut(after, "/")
	if !s.acc.useLink(tok) {
		s.log.Warn("refused a request", "check", "link", "method", r.Method, "path", redact(r.URL.Path))
		// A person followed it: a sentence, not a JSON body.
		refusePage(w, "This link was already used",
			"Each address orionctl ui prints opens one tab, once, so that a copy left in a terminal or in the browser's history opens nothing. "+
				"Run orionctl ui again for a new address, or use New tab on a tab of the page that is still open.")
		return
	}
	s.acc.setCookie(w)
	loc := localPath(rest) + "#k=" + s.acc.newKey()
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		// A browser does not send a SameSite=Strict cookie on a redirect
		// of a navigation another site began, so the page would arrive
		// without it: this page, now the initiator, goes on itself.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		esc := html.EscapeString(loc)
		fmt.Fprintf(w, "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=%s\"><title>Orion</title><p><a href=\"%s\">Open the page</a></p>\n", esc, esc)
		return
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusSeeOther)
}

// newLink answers POST /api/link with a fresh one-time URL, for the page's
// "new tab".
func (s *Server) newLink(w http.ResponseWriter, r *http.Request) {
	var p struct{}
	if !decodeBody(w, r, &p) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"url": s.NewLink()})
}

// redact keeps a token in a refused path out of the log.
func redact(p string) string {
	if strings.HasPrefix(p, httpguard.TokenPathPrefix) {
		return httpguard.TokenPathPrefix + "…"
	}
	return p
}
