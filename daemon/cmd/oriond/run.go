package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/daemon"
	"github.com/orion-agent/orion/internal/paths"
)

func newRunCmd(getenv func(string) string) *cobra.Command {
	var (
		cfg       daemon.Config
		roots     []string
		logFormat string
		logLevel  string
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Serve in the foreground until interrupted",
		Long: `Serve JSON-RPC 2.0 on a Unix socket until SIGINT or SIGTERM.

Defaults, each overridden by its environment variable and then by its flag:
  --socket      $ORION_SOCKET, else $XDG_RUNTIME_DIR/orion/oriond.sock,
                else /tmp/orion-$UID/oriond.sock
  --state-dir   $ORION_STATE_DIR, else $XDG_STATE_HOME/orion, else ~/.local/state/orion
  --allow-root  $ORION_ALLOW_ROOTS (colon-separated), else your home directory`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env := paths.Env(getenv)
			if !cmd.Flags().Changed("socket") {
				cfg.Socket = paths.DefaultSocket(env)
			}
			if !cmd.Flags().Changed("state-dir") {
				dir, err := paths.DefaultStateDir(env)
				if err != nil {
					return err
				}
				cfg.StateDir = dir
			}
			if !cmd.Flags().Changed("allow-root") {
				roots = splitRoots(getenv("ORION_ALLOW_ROOTS"))
				if len(roots) == 0 {
					home, err := paths.HomeDir(env)
					if err != nil {
						return fmt.Errorf("allow-root: no root given and no home directory: %w", err)
					}
					roots = []string{home}
				}
			}
			var err error
			if cfg.Socket, err = filepath.Abs(cfg.Socket); err != nil {
				return err
			}
			if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
				return err
			}
			cfg.AllowRoots = roots
			logger, err := newLogger(logFormat, logLevel)
			if err != nil {
				return usageError{err}
			}
			cfg.Logger = logger
			return daemon.Run(cmd.Context(), cfg, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Socket, "socket", "", "Unix socket to serve on [ORION_SOCKET]")
	f.StringVar(&cfg.StateDir, "state-dir", "", "directory for the bbolt store [ORION_STATE_DIR]")
	f.StringArrayVar(&roots, "allow-root", nil, "directory files may be written under; repeatable [ORION_ALLOW_ROOTS]")
	f.Int64Var(&cfg.MaxChunkBytes, "max-chunk-bytes", 0, "largest chunk accepted (default 1 MiB)")
	f.Int64Var(&cfg.MaxSessionBytes, "max-session-bytes", 0, "largest session accepted (default 256 MiB)")
	f.DurationVar(&cfg.IdleTimeout, "idle", 0, "default idle period before session.idle is sent (default 2s)")
	f.DurationVar(&cfg.AutoFinalize, "auto-finalize", 0, "default time without a chunk before a session without its marker ends truncated (default 30s)")
	f.StringVar((*string)(&cfg.TruncationPolicy), "truncation-policy", "keep", "default for content without its marker: keep, incomplete_file or write_with_note")
	f.DurationVar(&cfg.Retention, "retention", 0, "how long an untouched unfinished session is kept before it expires (default 1h)")
	f.DurationVar(&cfg.SummaryRetention, "summary-retention", 0, "how long a finished session's summary is kept (default 24h)")
	f.StringVar(&cfg.SpoolDir, "spool-dir", "", "recovery spool of session directories left by crashed clients (default <state-dir>/spool)")
	f.DurationVar(&cfg.SpoolSettle, "spool-settle", 0, "how long a spool entry must stay unchanged before it is imported (default 6s)")
	f.StringVar((*string)(&cfg.Validation.All), "validation", "", "validation policy for every category: strict, warn or off (default: strict for structured-data syntax, truncation and new lazy placeholders, warn for the rest)")
	f.Int64Var(&cfg.ValidateMaxBytes, "validate-max-bytes", 0, "largest content repaired and validated; larger content is written unchecked (default 8 MiB)")
	f.IntVar(&cfg.MaxAttempts, "max-attempts", 0, "corrected attempts allowed after a refused write (default 3)")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func splitRoots(s string) []string {
	var roots []string
	for _, r := range strings.Split(s, ":") {
		if r = strings.TrimSpace(r); r != "" {
			roots = append(roots, r)
		}
	}
	return roots
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: use text or json", format)
	}
}
