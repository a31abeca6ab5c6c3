package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/client/mcpserver"
	"github.com/orion-agent/orion/client/turnmark"
	"github.com/orion-agent/orion/internal/termsafe"
)

// mcpMaxMessage bounds one message from the host: write_file's largest
// content, escaped as JSON (up to six bytes a character), with room.
const mcpMaxMessage = 8 << 20

func newMCPCmd(g *globals) *cobra.Command {
	var (
		workspace string
		logLevel  string
		turnQuiet time.Duration
		noTurns   bool
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP tools on stdio that write files through oriond",
		Long: `Run an MCP server on stdin/stdout for an MCP host (Claude Code, Cursor,
VS Code, Codex, ...). Its tools write files through oriond's durable write
sessions: write_file for a small file, write_begin / write_append /
write_finalize for a long one sent in chunks, edit_file, undo and
list_sessions. The host starts it; see docs/mcp.md.

Paths resolve against the host's MCP roots; a host without roots gets the
directory this command started in, or --workspace-root. Logs go to stderr.`,
		Example: `  claude mcp add orion -- orionctl mcp
  orionctl mcp --workspace-root ~/src/project`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("mcp takes no arguments, got %q", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", logLevel)}
			}
			if workspace != "" {
				abs, err := filepath.Abs(workspace)
				if err != nil {
					return usageError{fmt.Errorf("--workspace-root: %w", err)}
				}
				workspace = abs
			}
			s, err := mcpserver.New(mcpserver.Options{
				Socket:        g.socket,
				WorkspaceRoot: workspace,
				Version:       moduleVersion(),
				Logger:        slog.New(termsafe.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
				TurnQuiet:     turnQuiet,
				NoTurns:       noTurns,
			})
			if err != nil {
				return usageError{err}
			}
			t := s.Transport(cmd.InOrStdin(), cmd.OutOrStdout(), mcpMaxMessage)
			// $ORION_CPU_PROFILE profiles the server until the host
			// disconnects, as it does oriond: for measuring, not serving.
			if path := os.Getenv("ORION_CPU_PROFILE"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return fmt.Errorf("ORION_CPU_PROFILE: %w", err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					f.Close()
					return fmt.Errorf("ORION_CPU_PROFILE: %w", err)
				}
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
			return s.Run(cmd.Context(), t)
		},
	}
	f := cmd.Flags()
	f.StringVar(&workspace, "workspace-root", "", "workspace root when the host gives no MCP roots (default: the current directory)")
	f.StringVar(&logLevel, "log-level", "warn", "stderr log level: debug, info, warn or error")
	f.DurationVar(&turnQuiet, "turn-quiet", turnmark.DefaultQuiet, "a turn begins at the first tool call after this long without one, and ends once this long passes with none")
	f.BoolVar(&noTurns, "no-turns", false, "do not mark turns in oriond")
	return cmd
}

// moduleVersion is orionctl's module version, or "dev" for a build from a
// work tree.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
