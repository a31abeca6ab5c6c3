package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/termsafe"
)

// proxyFlags are the settings `orionctl proxy` and `orionctl exec` share.
type proxyFlags struct {
	openaiURL     string
	anthURL       string
	workspace     string
	echo          string
	logLevel      string
	maxBody       int64
	maxConcurrent int
	daemonDown    string
}

func (pf *proxyFlags) bind(f *pflag.FlagSet, defaultLog string) {
	f.StringVar(&pf.openaiURL, "openai-upstream", proxy.DefaultOpenAIUpstream, "OpenAI-compatible base URL (with /v1) for /v1/chat/completions and other OpenAI paths")
	f.StringVar(&pf.anthURL, "anthropic-upstream", proxy.DefaultAnthropicUpstream, "Anthropic base URL (without /v1) for /v1/messages")
	f.StringVar(&pf.echo, "echo", proxy.EchoSummary, "what the agent sees of a written file: summary (one line) or content (the file in a fenced block)")
	f.StringVar(&pf.logLevel, "log-level", defaultLog, "debug, info, warn or error")
	f.Int64Var(&pf.maxBody, "max-request-bytes", proxy.DefaultMaxRequestBytes, "largest request body accepted (the APIs' own limit is 32 MB)")
	f.IntVar(&pf.maxConcurrent, "max-concurrent", proxy.DefaultMaxConcurrent, "requests served at once; more wait, then get 429")
	f.StringVar(&pf.daemonDown, "daemon-down", proxy.DaemonDownError, "when oriond cannot be reached: error (answer at once, no retries) or pass (send the request upstream unchanged, with a warning)")
}

func (pf *proxyFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(pf.logLevel)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", pf.logLevel)}
	}
	return slog.New(termsafe.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

func (pf *proxyFlags) config(socket, workspace string, log *slog.Logger) proxy.Config {
	return proxy.Config{
		OpenAIUpstream:    pf.openaiURL,
		AnthropicUpstream: pf.anthURL,
		Socket:            socket,
		WorkspaceRoot:     workspace,
		Echo:              pf.echo,
		Logger:            log,
		MaxRequestBytes:   pf.maxBody,
		MaxConcurrent:     pf.maxConcurrent,
		DaemonDown:        pf.daemonDown,
	}
}

func newProxyCmd(g *globals) *cobra.Command {
	var (
		pf           proxyFlags
		listen       string
		allowHosts   []string
		allowOrigins []string
		token        string
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve a local OpenAI- and Anthropic-compatible API that writes files through oriond",
		Long: `Run a local HTTP proxy between your agents and their model's API, shared by
every agent of this machine (for one agent, orionctl exec is simpler). Point
the agent's base URL at it (OpenAI: http://127.0.0.1:8788/v1, Anthropic:
http://127.0.0.1:8788) and have it send the header X-Orion-Workspace with
its project directory: relative targets resolve there, and writes stay
inside it. A chat request without that header is refused with a message
saying so, unless --workspace-root gives a default.

The proxy adds the WritePlanTool_begin tool to each chat request and, when
the model calls it, runs the write session itself: the file's text streams
into oriond and the agent sees one line per file written. Everything else
under /v1/ passes through. API keys are forwarded upstream and never logged
or stored.

Only programs of this machine are served: the Host header must be a
loopback address with the listening port (or a name given by --allow-host),
requests from web pages (with an Origin header) are refused unless
--allow-origin names the page, and bodies must be application/json. Where
other users or containers share the loopback, set a token (--token or
ORION_PROXY_TOKEN) and put it in the base URL: http://127.0.0.1:8788/t/TOKEN.

X-Orion-Bypass: 1 passes a request through untouched.`,
		Example: `  orionctl proxy
  ANTHROPIC_CUSTOM_HEADERS="X-Orion-Workspace: $PWD" ANTHROPIC_BASE_URL=http://127.0.0.1:8788 claude
  orionctl proxy --workspace-root ~/myproject
  orionctl proxy --openai-upstream https://openrouter.ai/api/v1 --echo content`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("proxy takes no arguments, got %q", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := pf.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ws := pf.workspace
			if ws != "" {
				if ws, err = filepath.Abs(ws); err != nil {
					return usageError{fmt.Errorf("--workspace-root: %w", err)}
				}
			}
			if token == "" {
				token = os.Getenv("ORION_PROXY_TOKEN")
			}
			cfg := pf.config(g.socket, ws, log)
			cfg.AllowHosts, cfg.AllowOrigins, cfg.Token = allowHosts, allowOrigins, token
			p, err := proxy.New(cfg)
			if err != nil {
				return usageError{err}
			}
			if !proxy.IsLoopback(listen) {
				log.Warn("listening beyond this machine: anyone who can reach this address can use your upstream API key's access and write files through oriond as you; set --token",
					"listen", listen)
			}
			ln, err := listenProxy(listen)
			if err != nil {
				return err
			}
			base := baseURL(ln.Addr(), "")
			if token != "" {
				base += "/t/TOKEN" // not the token itself: logs are kept
			}
			log.Info("orionctl proxy listening", "addr", listenAddr(listen, ln.Addr()),
				"openai_base_url", base+"/v1", "anthropic_base_url", base,
				"openai_upstream", pf.openaiURL, "anthropic_upstream", pf.anthURL, "workspace_root", ws)
			return serveProxy(cmd.Context(), ln, p)
		},
	}
	f := cmd.Flags()
	pf.bind(f, "info")
	f.StringVar(&listen, "listen", proxy.DefaultListen, "address to listen on; a non-loopback address is served with a warning")
	f.StringVar(&pf.workspace, "workspace-root", "", "workspace for requests without an X-Orion-Workspace header (default: none; such requests are refused)")
	f.StringArrayVar(&allowHosts, "allow-host", nil, "also accept this Host header (name or name:port); repeatable")
	f.StringArrayVar(&allowOrigins, "allow-origin", nil, "serve requests from this web origin (scheme://host[:port]); repeatable")
	f.StringVar(&token, "token", "", "secret every request must carry (in the base URL as /t/TOKEN, or Authorization: Bearer TOKEN) [ORION_PROXY_TOKEN]")
	return cmd
}

// listenProxy listens, saying what to do when the port is taken.
func listenProxy(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s is already in use: another orionctl proxy probably runs there (use it, or stop it); "+
			"to run a second one, choose another port with --listen 127.0.0.1:PORT", addr)
	}
	return ln, err
}

// listenAddr is the address as asked, with the port the system chose:
// 0.0.0.0:0 becomes 0.0.0.0:41621, not [::]:41621.
func listenAddr(asked string, got net.Addr) string {
	host, _, err := net.SplitHostPort(asked)
	ta, ok := got.(*net.TCPAddr)
	if err != nil || !ok {
		return got.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}

// baseURL is the Anthropic base URL a client of this machine uses: an
// unspecified listen address (0.0.0.0, ::) is reached at 127.0.0.1.
func baseURL(a net.Addr, token string) string {
	host, port := "127.0.0.1", ""
	if ta, ok := a.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
		if !ta.IP.IsUnspecified() {
			host = ta.IP.String()
		}
	}
	u := "http://" + net.JoinHostPort(host, port)
	if token != "" {
		u += "/t/" + token
	}
	return u
}

// serveProxy serves until ctx ends, then lets streams in flight finish
// for a few seconds.
func serveProxy(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
