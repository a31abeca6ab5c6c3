package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/daemon"
	"github.com/orion-agent/orion/internal/checkpoint"
	"github.com/orion-agent/orion/internal/logging"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/trace/tracecfg"
)

func newRunCmd(getenv func(string) string) *cobra.Command {
	var (
		cfg   daemon.Config
		roots []string
		// allowProtected lifts default-protected paths.
		allowProtected []string
		logFormat      string
		logLevel       string
		traces         tracecfg.Settings
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Serve in the foreground until interrupted",
		Long: `Serve JSON-RPC 2.0 on a Unix socket until SIGINT or SIGTERM.

Every flag can be set in the config file (TOML; the key is the flag's name:
see "oriond config"), at --config, $ORION_CONFIG, else
` + defaultConfigPath(getenv) + `. Each setting takes the first of: its flag,
its environment variable, the config file, the default:
  --socket          $ORION_SOCKET, else $XDG_RUNTIME_DIR/orion/oriond.sock,
                    else /tmp/orion-$UID/oriond.sock
  --state-dir       $ORION_STATE_DIR, else $XDG_STATE_HOME/orion,
                    else ~/.local/state/orion
  --allow-root      $ORION_ALLOW_ROOTS (colon-separated), else your home directory
  --trace-postgres  $ORION_TRACE_POSTGRES (keeps a password off the command line)
  --store-max-bytes $ORION_STORE_MAX_BYTES
"oriond config print" shows the result.

Started by systemd with its output on the journal, oriond writes log lines
without timestamps (journald adds them) and with syslog priority prefixes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Flags not given take the environment, the config file or
			// the default, in that order.
			res, err := applyConfig(cmd, getenv)
			if err != nil {
				return err
			}
			if cfg.Socket, err = filepath.Abs(cfg.Socket); err != nil {
				return err
			}
			if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
				return err
			}
			cfg.AllowRoots = roots
			if cfg.AllowProtected, err = protectedEntries(allowProtected); err != nil {
				return usageError{fmt.Errorf("allow-protected: %w", err)}
			}
			if cfg.ConfigPaths, err = configPaths(res, getenv); err != nil {
				return err
			}
			cfg.PathEnv = getenv("PATH")
			if home, err := paths.HomeDir(paths.Env(getenv)); err == nil {
				cfg.Home = home
			}
			target := logging.DetectTarget(getenv, os.Stderr)
			logger, err := logging.New(os.Stderr, logFormat, logLevel, target)
			if err != nil {
				return usageError{err}
			}
			cfg.Logger = logger
			if target.Manager != "" {
				logger.Info("started by a service manager", "manager", target.Manager, "journal", target.Journal)
			}
			tracer, err := tracecfg.New(traces, logger)
			if err != nil {
				return usageError{err}
			}
			if tracer != nil {
				// The daemon attaches it to its store; closing it again
				// here is harmless and covers a daemon that did not.
				defer tracer.Close()
				cfg.Trace = tracer
			}
			if path := getenv("ORION_CPU_PROFILE"); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			if path := getenv("ORION_EXEC_TRACE"); path != "" {
				stop, err := startExecTrace(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			if path := getenv("ORION_MEM_PROFILE"); path != "" {
				stop, err := startMemProfile(path, logger)
				if err != nil {
					return err
				}
				defer stop()
			}
			return daemon.Run(cmd.Context(), cfg, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Socket, "socket", "", "Unix socket to serve on [ORION_SOCKET]")
	f.StringVar(&cfg.StateDir, "state-dir", "", "directory for the bbolt store [ORION_STATE_DIR]")
	f.StringArrayVar(&roots, "allow-root", nil, "directory files may be written under; repeatable [ORION_ALLOW_ROOTS]")
	f.StringArrayVar(&allowProtected, "allow-protected", nil, "protected path (or name, such as .git) sessions may write after all; repeatable (oriond config print lists them)")
	f.Int64Var(&cfg.MaxChunkBytes, "max-chunk-bytes", session.DefaultMaxChunkBytes, "largest chunk accepted, in bytes")
	f.Int64Var(&cfg.MaxSessionBytes, "max-session-bytes", session.DefaultMaxSessionBytes, "largest session accepted, in bytes")
	f.DurationVar(&cfg.IdleTimeout, "idle", session.DefaultIdleTimeout, "default idle period before session.idle is sent")
	f.DurationVar(&cfg.AutoFinalize, "auto-finalize", session.DefaultAutoFinalize, "default time without a chunk before a session without its marker ends truncated")
	f.StringVar((*string)(&cfg.TruncationPolicy), "truncation-policy", "keep", "default for content without its marker: keep, incomplete_file or write_with_note")
	f.DurationVar(&cfg.Retention, "retention", session.DefaultRetention, "how long an untouched unfinished session is kept before it expires")
	f.DurationVar(&cfg.SummaryRetention, "summary-retention", session.DefaultSummaryRetention, "how long a finished session's summary is kept")
	f.StringVar(&cfg.SpoolDir, "spool-dir", "", "recovery spool of session directories left by crashed clients (default <state-dir>/spool)")
	f.DurationVar(&cfg.SpoolSettle, "spool-settle", daemon.DefaultSpoolSettle, "how long a spool entry must stay unchanged before it is imported")
	f.StringVar((*string)(&cfg.Validation.All), "validation", "", "validation policy for every category: strict, warn or off (default: strict for structured-data syntax, truncation and new lazy placeholders, warn for the rest)")
	f.Int64Var(&cfg.ValidateMaxBytes, "validate-max-bytes", session.DefaultValidateMaxBytes, "largest content repaired and validated, in bytes; larger content is written unchecked")
	f.IntVar(&cfg.MaxAttempts, "max-attempts", session.DefaultMaxAttempts, "corrected attempts allowed after a refused write")
	f.IntVar(&cfg.MaxConnections, "max-connections", 0, "most clients served at once; more are refused with too_many_connections (0: 1024, lowered to fit RLIMIT_NOFILE)")
	f.IntVar(&cfg.MaxInflight, "max-inflight", daemon.DefaultMaxInflight, "most requests of one connection awaiting their reply; the daemon stops reading that connection until one is answered")
	f.IntVar(&cfg.MaxClientConnections, "max-client-connections", 0, "most connections one client process holds; more are refused with too_many_connections (0: a quarter of max-connections)")
	f.DurationVar(&cfg.ConnIdleTimeout, "connection-idle-timeout", daemon.DefaultConnIdleTimeout, "close a connection idle this long that drives no unfinished session, awaits no reply and follows no trace (negative: never)")
	f.DurationVar(&cfg.HeaderTimeout, "header-timeout", daemon.DefaultHeaderTimeout, "longest a frame's header may take from its first byte; the connection is closed then")
	f.IntVar(&cfg.MaxSessions, "max-sessions", session.DefaultMaxSessions, "most unfinished sessions (open, truncated, needing corrections); more are refused with too_many_sessions")
	f.IntVar(&cfg.MaxClientSessions, "max-client-sessions", session.DefaultMaxClientSessions, "most unfinished sessions of one client process; more are refused with too_many_sessions")
	f.IntVar(&cfg.MaxFinishedSessions, "max-finished-sessions", session.DefaultMaxFinishedSessions, "most finished sessions whose summaries (and undo backups) are kept for --summary-retention; past it the oldest are forgotten first")
	f.Int64Var(&cfg.StoreMaxBytes, "store-max-bytes", session.DefaultStoreMaxBytes, "cap on the store's data, in bytes: the oldest undo backups are dropped to stay under it, then new content is refused with store_full (0: no cap) [ORION_STORE_MAX_BYTES]")
	f.Int64Var(&cfg.CheckpointMaxFileBytes, "checkpoint-max-file-bytes", checkpoint.DefaultMaxFileBytes, "largest file a workspace checkpoint stores, in bytes; a larger one is listed as changed but cannot be restored")
	f.Int64Var(&cfg.CheckpointMaxWorkspaceFiles, "checkpoint-max-workspace-files", checkpoint.DefaultMaxWorkspaceFiles, "most files (after the ignores) a workspace may hold to get checkpoints; a bigger one gets none, and its turns say so")
	f.Int64Var(&cfg.CheckpointMaxWorkspaceBytes, "checkpoint-max-workspace-bytes", checkpoint.DefaultMaxWorkspaceBytes, "most bytes (after the ignores) a workspace may hold to get checkpoints")
	f.DurationVar(&cfg.CheckpointRetention, "checkpoint-retention", checkpoint.DefaultRetention, "how long checkpoints and turns are kept (pinned ones stay); within --store-max-bytes the oldest unpinned go first")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	tracecfg.AddFlags(f, &traces)
	// Help and `oriond config print` list the flags in this order.
	f.SortFlags = false
	return cmd
}
