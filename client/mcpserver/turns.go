package mcpserver

import (
	"log/slog"

	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/turnmark"
)

// newMarker marks turns by quiet periods: the host never shows an MCP
// server the person's messages, only the tool calls, so a turn begins at
// the first call after Options.TurnQuiet without one and ends once that
// much time passes again.
func newMarker(opts Options, log *slog.Logger) *turnmark.Marker {
	if opts.NoTurns {
		return nil
	}
	quiet := opts.TurnQuiet
	if quiet <= 0 {
		quiet = turnmark.DefaultQuiet
	}
	return turnmark.New(turnmark.Config{
		Dial: func(ctx context.Context) (*client.Client, error) {
			return client.Dial(ctx, opts.Socket, client.Options{})
		},
		Idle:   quiet,
		Logger: log,
	})
}

// markTurn notes a tool call in the turn of its workspace: the first of
// the call's roots (the one a relative path lands in), or the server's
// own root. The agent is the host's name (claude-code, cursor, ...).
func (s *Server) markTurn(ctx context.Context, req *mcp.CallToolRequest, roots []string) {
	if s.turns == nil {
		return
	}
	var ws string
	switch {
	case len(roots) > 0:
		ws = roots[0]
	case len(s.roots.fallback) > 0:
		ws = s.roots.fallback[0]
	default:
		return
	}
	s.turns.Call(ctx, ws, hostName(req))
}
