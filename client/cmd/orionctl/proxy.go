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
	"github.com/orion-agent/orion/client/turnmark"
	"github.com/orion-agent/orion/internal/termsafe"
)

// proxyFlags are the settings `orionctl proxy` and `orionctl exec` share.
type proxyFlags struct {
	openaiURL     string
	anthURL       string
	geminiURL     string
	workspace     string
	echo          string
	logLevel      string
	maxBody       int64
	maxConcurrent int
	daemonDown    string
	maxConns      int
	maxUserConns  int
	turnIdle      time.Duration
	noTurns       bool
}

func (pf *proxyFlags) bind(f *pflag.FlagSet, defaultLog string) {
	f.StringVar(&pf.openaiURL, "openai-upstream", proxy.DefaultOpenAIUpstream, "OpenAI-compatible base URL (with /v1) for /v1/chat/completions and other OpenAI paths")
	f.StringVar(&pf.anthURL, "anthropic-upstream", proxy.DefaultAnthropicUpstream, "Anthropic base URL (without /v1) for /v1/messages")
	f.StringVar(&pf.geminiURL, "gemini-upstream", proxy.DefaultGeminiUpstream, "Gemini API base URL (without /v1beta) for /v1beta/models/...")
	f.StringVar(&pf.echo, "echo", proxy.EchoSummary, "what the agent sees of a written file: summary (one line) or content (the file in a fenced block)")
	f.StringVar(&pf.logLevel, "log-level", defaultLog, "debug, info, warn or error")
	f.Int64Var(&pf.maxBody, "max-request-bytes", proxy.DefaultMaxRequestBytes, "largest request body accepted (the APIs' own limit is 32 MB)")
	f.IntVar(&pf.maxConcurrent, "max-concurrent", proxy.DefaultMaxConcurrent, "requests served at once; more wait, then get 429")
	f.StringVar(&pf.daemonDown, "daemon-down", proxy.DaemonDownError, "when oriond cannot be reached: error (answer at once, no retries) or pass (send the request upstream unchanged, with a warning)")
	f.IntVar(&pf.maxConns, "max-connections", proxy.DefaultMaxConnections, "connections open at once; more are answered 503 and closed")
	f.DurationVar(&pf.turnIdle, "turn-idle", turnmark.DefaultIdle, "end an agent's turn after this long with no request in its workspace (a turn normally ends when the model hands back)")
	f.BoolVar(&pf.noTurns, "no-turns", false, "do not mark the agent's turns in oriond (turns make everything a turn changed undoable with orionctl undo --turn)")
	f.IntVar(&pf.maxUserConns, "max-user-connections", proxy.DefaultMaxUserConnections, "connections one local user may hold open (counted on Linux, where the kernel says whose a connection is)")
}

// limit bounds ln's connections as the flags say.
func (pf *proxyFlags) limit(ln net.Listener, log *slog.Logger) net.Listener {
	return proxy.LimitConns(ln, proxy.ConnLimits{Max: pf.maxConns, PerUser: pf.maxUserConns, Logger: log})
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
		GeminiUpstream:    pf.geminiURL,
		Socket:            socket,
		WorkspaceRoot:     workspace,
		Echo:              pf.echo,
		Logger:            log,
		MaxRequestBytes:   pf.maxBody,
		MaxConcurrent:     pf.maxConcurrent,
		DaemonDown:        pf.daemonDown,
		TurnIdle:          pf.turnIdle,
		NoTurns:           pf.noTurns,
	}
}

// secretFlags say where the shared proxy's secret comes from.
type secretFlags struct {
	token     string
	tokenFile string
	noToken   bool
	rotate    bool
	printEnv  bool
}

// secret is the shared proxy's secret and, for the log, where it is.
type secret struct {
	token string
	where string // "" when there is none (--no-token)
}

// load finds the secret: --token (or ORION_PROXY_TOKEN), else the secret
// file, made on first use; none with --no-token.
func (sf *secretFlags) load(flags *pflag.FlagSet, getenv func(string) string, log *slog.Logger) (secret, error) {
	fromFlag := sf.token != "" || flags.Changed("token")
	if sf.token == "" {
		sf.token = getenv("ORION_PROXY_TOKEN")
	}
	fileChosen := flags.Changed("token-file")
	switch {
	case sf.noToken && (sf.token != "" || fileChosen || sf.rotate):
		return secret{}, usageError{errors.New("--no-token serves without a secret: drop --token, ORION_PROXY_TOKEN, --token-file and --rotate-token, or drop --no-token")}
	case sf.noToken:
		return secret{}, nil
	case sf.token != "" && (fileChosen || sf.rotate):
		what := "--token"
		if !fromFlag {
			what = "ORION_PROXY_TOKEN"
		}
		return secret{}, usageError{fmt.Errorf("%s gives the secret itself; --token-file and --rotate-token are for a secret kept in a file: use one or the other", what)}
	case sf.token != "":
		if !fromFlag {
			return secret{sf.token, "ORION_PROXY_TOKEN"}, nil
		}
		return secret{sf.token, "--token"}, nil
	}
	path := sf.tokenFile
	if path == "" {
		var err error
		if path, err = proxy.DefaultTokenFile(getenv); err != nil {
			return secret{}, fmt.Errorf("finding where to keep the proxy's secret: %w; choose a file with --token-file", err)
		}
	}
	if sf.rotate {
		tok, err := proxy.RotateToken(path)
		if err != nil {
			return secret{}, err
		}
		log.Info("wrote a new secret; restart a running orionctl proxy (systemctl --user restart orionctl-proxy) and give the agents the new base URLs (orionctl proxy --print-env)",
			"secret_file", path)
		return secret{tok, path}, nil
	}
	tok, created, err := proxy.LoadToken(path)
	if err != nil {
		return secret{}, err
	}
	if created {
		log.Info("made the proxy's secret; agents put it in their base URL (orionctl proxy --print-env prints them)", "secret_file", path)
	}
	return secret{tok, path}, nil
}

// baseURLs are the ANTHROPIC_BASE_URL and OPENAI_BASE_URL lines for a
// proxy at listen with the secret token.
func baseURLs(listen, token string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "0" || port == "" {
		return "", usageError{fmt.Errorf("--print-env needs the proxy's address with its port, as in --listen 127.0.0.1:8788; got %q", listen)}
	}
	addr := &net.TCPAddr{IP: net.ParseIP(host)}
	if addr.IP == nil {
		addr.IP = net.IPv4(127, 0, 0, 1)
	}
	addr.Port, _ = strconv.Atoi(port)
	base := baseURL(addr, token)
	return "ANTHROPIC_BASE_URL=" + base + "\nOPENAI_BASE_URL=" + base + "/v1\n", nil
}

func newProxyCmd(g *globals) *cobra.Command {
	var (
		pf           proxyFlags
		sf           secretFlags
		listen       string
		allowHosts   []string
		allowOrigins []string
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve a local OpenAI- and Anthropic-compatible API that writes files through oriond",
		Long: `Run a local HTTP proxy between your agents and their model's API, shared by
every agent of this machine (for one agent, orionctl exec is simpler). Point
the agent's base URL at it, with the proxy's secret in it
(orionctl proxy --print-env prints both base URLs), and have it send the
header X-Orion-Workspace with its project directory: relative targets
resolve there, and writes stay inside it. A chat request without that
header is refused with a message saying so, unless --workspace-root gives
a default.

The proxy adds the WritePlanTool_begin tool to each chat request and, when
the model calls it, runs the write session itself: the file's text streams
into oriond and the agent sees one line per file written. Everything else
under /v1/ passes through. API keys are forwarded upstream and never logged
or stored.

Only your programs are served. The secret is made at the first start and
kept in a file only you can read (proxy-token in your configuration
directory, or --token-file); a request without it gets 401, before
anything reaches the model or oriond. --rotate-token replaces it.
--no-token serves without a secret: then any program of any user of this
machine can write files as you. The Host header must be a loopback address
with the listening port (or a name given by --allow-host), requests from
web pages (with an Origin header) are refused unless --allow-origin names
the page, and bodies must be application/json.

X-Orion-Bypass: 1 passes a request through untouched.`,
		Example: `  orionctl proxy
  env $(orionctl proxy --print-env) ANTHROPIC_CUSTOM_HEADERS="X-Orion-Workspace: $PWD" claude
  orionctl proxy --workspace-root ~/myproject
  orionctl proxy --openai-upstream https://openrouter.ai/api/v1 --echo content
  orionctl proxy --rotate-token`,
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
			sec, err := sf.load(cmd.Flags(), os.Getenv, log)
			if err != nil {
				return err
			}
			if sf.printEnv {
				lines, err := baseURLs(listen, sec.token)
				if err != nil {
					return err
				}
				_, err = io.WriteString(cmd.OutOrStdout(), lines)
				return err
			}
			if sf.rotate {
				return nil
			}
			ws := pf.workspace
			if ws != "" {
				if ws, err = filepath.Abs(ws); err != nil {
					return usageError{fmt.Errorf("--workspace-root: %w", err)}
				}
			}
			cfg := pf.config(g.socket, ws, log)
			cfg.AllowHosts, cfg.AllowOrigins, cfg.Token = allowHosts, allowOrigins, sec.token
			p, err := proxy.New(cfg)
			if err != nil {
				return usageError{err}
			}
			if !proxy.IsLoopback(listen) {
				log.Warn("listening beyond this machine: anyone who can reach this address can use your upstream API key's access and write files through oriond as you; keep the secret",
					"listen", listen)
			}
			ln, err := listenProxy(listen)
			if err != nil {
				return err
			}
			if sec.token == "" {
				log.Warn("serving without a secret (--no-token): any program of any user of this machine can send requests here and write files as you, "+
					"and a failed edit's errors leave out the file's lines; drop --no-token to require the secret",
					"addr", listenAddr(listen, ln.Addr()))
			}
			base := baseURL(ln.Addr(), "")
			secretAt := sec.where
			if secretAt == "" {
				secretAt = "none"
			}
			// The base URLs without the secret, and where it is, never
			// the secret itself: logs are kept and read by others.
			log.Info("orionctl proxy listening", "addr", listenAddr(listen, ln.Addr()),
				"openai_base_url", base+"/v1", "anthropic_base_url", base, "secret", secretAt,
				"openai_upstream", pf.openaiURL, "anthropic_upstream", pf.anthURL, "workspace_root", ws)
			defer p.Close()
			return serveProxy(cmd.Context(), pf.limit(ln, log), p)
		},
	}
	f := cmd.Flags()
	pf.bind(f, "info")
	f.StringVar(&listen, "listen", proxy.DefaultListen, "address to listen on; a non-loopback address is served with a warning")
	f.StringVar(&pf.workspace, "workspace-root", "", "workspace for requests without an X-Orion-Workspace header (default: none; such requests are refused)")
	f.StringArrayVar(&allowHosts, "allow-host", nil, "also accept this Host header (name or name:port); repeatable")
	f.StringArrayVar(&allowOrigins, "allow-origin", nil, "serve requests from this web origin (scheme://host[:port]); repeatable")
	f.StringVar(&sf.token, "token", "", "the secret itself, instead of the secret file (in the base URL as /t/TOKEN, or Authorization: Bearer TOKEN) [ORION_PROXY_TOKEN]")
	f.StringVar(&sf.tokenFile, "token-file", "", "file that keeps the secret, made (0600) at the first start (default: proxy-token in $XDG_CONFIG_HOME/orion or ~/.config/orion)")
	f.BoolVar(&sf.rotate, "rotate-token", false, "replace the secret in the secret file with a new one, and exit (with --print-env, print the new base URLs)")
	f.BoolVar(&sf.printEnv, "print-env", false, "print ANTHROPIC_BASE_URL= and OPENAI_BASE_URL= lines with the secret for --listen, and exit (making the secret file if there is none)")
	f.BoolVar(&sf.noToken, "no-token", false, "serve without a secret: any program of any user of this machine can then write files as you")
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
	srv := &http.Server{Handler: h, ReadHeaderTimeout: proxy.HeaderTimeout, IdleTimeout: proxy.IdleTimeout}
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
