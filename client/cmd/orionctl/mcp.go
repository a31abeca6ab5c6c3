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
		fsCompat  bool
		turnQuiet time.Duration
		noTurns   bool
	)
	cmd := &cobra.Command{
		Use:   "mcp [DIR...]",
		Short: "Serve MCP tools on stdio that write files through oriond",
		Long: `Run an MCP server on stdin/stdout for an MCP host (Claude Code, Cursor,
VS Code, Codex, ...). Its tools write files through oriond's durable write
sessions: write_file for a small file, write_begin / write_append /
write_finalize for a long one sent in chunks, edit_file, undo and
list_sessions. The host starts it; see docs/mcp.md.

The workspace is the directories given as arguments, or --workspace-root;
with neither, the host's MCP roots, or for a host without roots the
directory this command started in. Logs go to stderr.

With --filesystem-compatible DIR... it serves instead the tools of the
reference MCP filesystem server (read_text_file, write_file, ...) with the
same names, arguments and results, confined to the directories given, its
writes going through oriond.`,
		Example: `  claude mcp add orion -- orionctl mcp
  orionctl mcp --workspace-root ~/src/project
  orionctl mcp --filesystem-compatible ~/src/project`,
		Args: func(cmd *cobra.Command, args []string) error {
			if fsCompat {
				if len(args) == 0 {
					return usageError{fmt.Errorf("--filesystem-compatible needs at least one directory")}
				}
				return nil
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
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
			// The directories the host's configuration names are the
			// workspace; MCP roots only where none are named.
			var dirs []string
			if !fsCompat {
				for _, a := range args {
					abs, err := filepath.Abs(a)
					if err != nil {
						return usageError{fmt.Errorf("directory %q: %w", a, err)}
					}
					dirs = append(dirs, abs)
				}
				if len(dirs) == 0 && cmd.Flags().Changed("workspace-root") {
					dirs = []string{workspace}
				}
			}
			s, err := mcpserver.New(mcpserver.Options{
				Socket:               g.socket,
				WorkspaceRoot:        workspace,
				Directories:          dirs,
				FilesystemCompatible: fsArgs(fsCompat, args),
				Version:              moduleVersion(),
				Logger:               slog.New(termsafe.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
				TurnQuiet:            turnQuiet,
				NoTurns:              noTurns,
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
	f.BoolVar(&fsCompat, "filesystem-compatible", false, "serve the reference MCP filesystem server's tools, confined to the directories given as arguments")
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

func fsArgs(on bool, args []string) []string {
	if on {
		return args
	}
	return nil
}
