package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client/proxy"
	"github.com/orion-agent/orion/internal/termsafe"
)

func newProxyCmd(g *globals) *cobra.Command {
	var (
		listen    string
		openaiURL string
		anthURL   string
		workspace string
		echo      string
		logLevel  string
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve a local OpenAI- and Anthropic-compatible API that writes files through oriond",
		Long: `Run a local HTTP proxy between any agent and its model's API. Point the
agent's base URL at it (OpenAI: http://127.0.0.1:8788/v1, Anthropic:
http://127.0.0.1:8788). The proxy adds the WritePlanTool_begin tool to each
chat request and, when the model calls it, runs the write session itself:
the file's text streams into oriond and the agent sees one line per file
written. Everything else under /v1/ passes through. API keys are forwarded
upstream and never logged or stored.

Per request: the header X-Orion-Workspace names the workspace root relative
targets resolve against (checked by oriond's path guard); X-Orion-Bypass: 1
passes the request through untouched.`,
		Example: `  orionctl proxy
  ANTHROPIC_BASE_URL=http://127.0.0.1:8788 claude
  OPENAI_BASE_URL=http://127.0.0.1:8788/v1 codex
  orionctl proxy --openai-upstream https://openrouter.ai/api/v1 --echo content`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("proxy takes no arguments, got %q", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", logLevel)}
			}
			log := slog.New(termsafe.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			if workspace == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				workspace = wd
			}
			p, err := proxy.New(proxy.Config{
				OpenAIUpstream:    openaiURL,
				AnthropicUpstream: anthURL,
				Socket:            g.socket,
				WorkspaceRoot:     workspace,
				Echo:              echo,
				Logger:            log,
			})
			if err != nil {
				return usageError{err}
			}
			if !proxy.IsLoopback(listen) {
				log.Warn("listening beyond this machine: anyone who can reach this address can use your upstream API key's access and write files through oriond as you",
					"listen", listen)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			return serveProxy(cmd.Context(), ln, p, log, openaiURL, anthURL)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", proxy.DefaultListen, "address to listen on; a non-loopback address is served with a warning")
	f.StringVar(&openaiURL, "openai-upstream", proxy.DefaultOpenAIUpstream, "OpenAI-compatible base URL (with /v1) for /v1/chat/completions and other OpenAI paths")
	f.StringVar(&anthURL, "anthropic-upstream", proxy.DefaultAnthropicUpstream, "Anthropic base URL (without /v1) for /v1/messages")
	f.StringVar(&workspace, "workspace-root", "", "workspace root relative targets resolve against (default: the current directory)")
	f.StringVar(&echo, "echo", proxy.EchoSummary, "what the agent sees of a written file: summary (one line) or content (the file in a fenced block)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// serveProxy serves until ctx ends, then lets streams in flight finish
// for a few seconds.
func serveProxy(ctx context.Context, ln net.Listener, p *proxy.Proxy, log *slog.Logger, openaiURL, anthURL string) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	log.Info("orionctl proxy listening", "addr", ln.Addr().String(),
		"openai_base_url", "http://"+ln.Addr().String()+"/v1", "anthropic_base_url", "http://"+ln.Addr().String(),
		"openai_upstream", openaiURL, "anthropic_upstream", anthURL)
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
