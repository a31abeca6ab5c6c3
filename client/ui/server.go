// Package ui is `orionctl ui`: a page on loopback where a person watches
// what agents write through oriond and takes it back. It is a client of
// the daemon like any other: it follows the daemon's trace events, asks
// about the sessions they name (at most once a second), and turns the
// page's actions into the daemon's own requests, answering with the
// daemon's own messages. It holds no session logic.
//
// Access (see internal/httpguard): the URL it prints carries a random
// token, exchanged at the first request for an HttpOnly SameSite=Strict
// cookie; every request must carry one or the other, name this machine by
// loopback in Host, and send no Origin or the page's own. Actions are POST
// with a JSON body. No CORS header is ever sent, so a page elsewhere in
// the browser can neither read the page nor act through it.
package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

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
	// Token is the URL's secret; empty makes a random one.
	Token  string
	Logger *slog.Logger
}

// Server serves the page.
type Server struct {
	cfg   Config
	ln    net.Listener
	guard *httpguard.Guard
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
	// Cookies are not kept apart by port: the name carries it, so two
	// pages of two daemons never take each other's.
	g, err := httpguard.New(httpguard.Options{Token: cfg.Token, CookieName: "orion_ui_" + port, SameOrigin: true, JSONOnly: true})
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &Server{cfg: cfg, ln: ln, guard: g, hub: newHub(cfg.Socket, cfg.Logger), log: cfg.Logger}, nil
}

// URL is the address to open: it carries the token, which the page
// exchanges for its cookie at once.
func (s *Server) URL() string {
	return "http://" + s.ln.Addr().String() + httpguard.TokenPathPrefix + s.cfg.Token + "/"
}

// Addr is the address the page is served on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		in, ref := s.guard.Check(r)
		if ref != nil {
			s.log.Warn("refused a request", "check", ref.Check, "method", r.Method, "path", redact(r.URL.Path))
			ref.Write(w)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			writeJSON(w, http.StatusMethodNotAllowed, apiError{Message: "only GET and POST"})
			return
		}
		if strings.HasPrefix(r.URL.Path, httpguard.TokenPathPrefix) {
			// The token came in the URL: it becomes the cookie, and the
			// address bar (history, a shared screen) loses it.
			s.guard.SetCookie(w, s.cfg.Token)
			http.Redirect(w, in, in.URL.Path, http.StatusSeeOther)
			return
		}
		mux.ServeHTTP(w, in)
	})
}

// redact keeps a token in a refused path out of the log.
func redact(p string) string {
	if strings.HasPrefix(p, httpguard.TokenPathPrefix) {
		return httpguard.TokenPathPrefix + "…"
	}
	return p
}
