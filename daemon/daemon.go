// Package daemon is oriond's server: it owns the socket, the store and the
// session engine, and serves JSON-RPC 2.0 with LSP-style Content-Length
// framing to clients of the same user.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/internal/watch"
	"github.com/orion-agent/orion/protocol"
)

// StoreFile is the bbolt file's name inside the state directory.
const StoreFile = "orion.db"

// Config is everything oriond run needs. Zero limits take the engine's
// defaults.
type Config struct {
	Socket          string
	StateDir        string
	AllowRoots      []string
	MaxChunkBytes   int64
	MaxSessionBytes int64
	// IdleTimeout, AutoFinalize and TruncationPolicy are the defaults for
	// sessions that do not set their own.
	IdleTimeout      time.Duration
	AutoFinalize     time.Duration
	TruncationPolicy protocol.TruncationPolicy
	// Retention and SummaryRetention are how long unfinished sessions and
	// finished sessions' summaries are kept.
	Retention        time.Duration
	SummaryRetention time.Duration
	Logger           *slog.Logger
	// Trace, if set, receives an event for every request, session
	// transition and write.
	Trace trace.Recorder
	// SpoolDir is the recovery spool watched for sessions clients left
	// behind ("" means <state dir>/spool); SpoolSettle how long an entry
	// must stay unchanged before it is imported.
	SpoolDir    string
	SpoolSettle time.Duration
	// Validation is the default validation policy; ValidateMaxBytes and
	// MaxAttempts bound checking and corrected attempts (zero: defaults).
	Validation       validate.Policies
	ValidateMaxBytes int64
	MaxAttempts      int
	// MaxConnections bounds the clients served at once (0: 1024, lowered
	// to fit RLIMIT_NOFILE); MaxInflight the requests of one connection
	// awaiting their reply before the daemon stops reading it (0:
	// DefaultMaxInflight).
	MaxConnections int
	MaxInflight    int
	// MaxClientConnections is one peer process's share of MaxConnections
	// (0: a quarter of it). ConnIdleTimeout closes a connection idle that
	// long with no session, request or trace follow (0:
	// DefaultConnIdleTimeout; negative: never). HeaderTimeout bounds a
	// frame's header from its first byte (0: DefaultHeaderTimeout).
	MaxClientConnections int
	ConnIdleTimeout      time.Duration
	HeaderTimeout        time.Duration
	// MaxSessions and MaxClientSessions cap the unfinished sessions of
	// the daemon and of one peer process (0: the engine's defaults).
	MaxSessions       int
	MaxClientSessions int
	// MaxFinishedSessions bounds the finished sessions whose summaries
	// are kept (0: the engine's default).
	MaxFinishedSessions int
	// StoreMaxBytes caps the store's live data: past it the oldest undo
	// backups are dropped, then new content is refused (0: no cap).
	StoreMaxBytes int64
	// Checkpoint* bound workspace checkpoints (0: the engine's defaults).
	CheckpointMaxFileBytes      int64
	CheckpointMaxWorkspaceFiles int64
	CheckpointMaxWorkspaceBytes int64
	CheckpointRetention         time.Duration
	// ConfigPaths are the config file and directory oriond reads at start;
	// like the state directory, socket directory and spool, a session may
	// never write them (see pathguard.Protection).
	ConfigPaths []string
	// Home is the directory whose dotfiles are protected by default
	// ("" means the user's home directory).
	Home string
	// AllowProtected lifts default-protected paths (--allow-protected).
	AllowProtected []string
	// PathEnv is the daemon's $PATH: its directories inside Home are
	// protected, with the usual ones (pathguard.DefaultPathDirs).
	PathEnv string
}

// Protection is what the guard refuses inside the roots.
func (c *Config) Protection() pathguard.Protection {
	spool := c.SpoolDir
	if spool == "" {
		spool = filepath.Join(c.StateDir, "spool")
	}
	home := c.Home
	if home == "" {
		home = pathguard.HomeDir()
	}
	// The socket and its lock, not their directory: a socket in a shared
	// directory such as /tmp must not protect all of it.
	always := append([]string{c.StateDir, spool, c.Socket, c.Socket + ".lock"}, c.ConfigPaths...)
	return pathguard.Protection{Always: always, Default: pathguard.DefaultProtected(home), Allowed: c.AllowProtected,
		Home: home, PathDirs: pathguard.PathDirs(c.PathEnv, home)}
}

// DefaultSpoolSettle is longer than the save interval (5 s) of the clients
// that write spool entries while they run, so an entry a live client is
// still writing is not imported half-done.
const DefaultSpoolSettle = 6 * time.Second

// Validate reports the first setting that cannot work, naming it.
func (c *Config) Validate() error {
	if c.Socket == "" {
		return errors.New("socket: no socket path")
	}
	if !filepath.IsAbs(c.Socket) {
		return fmt.Errorf("socket: %q must be an absolute path", c.Socket)
	}
	if c.StateDir == "" {
		return errors.New("state-dir: no state directory")
	}
	if len(c.AllowRoots) == 0 {
		return errors.New("allow-root: no allowed root; give at least one directory")
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("max-connections: %d; give a positive number, or 0 for the default", c.MaxConnections)
	}
	if c.MaxInflight < 0 {
		return fmt.Errorf("max-inflight: %d; give a positive number, or 0 for the default", c.MaxInflight)
	}
	if c.StoreMaxBytes > 0 && c.MaxSessionBytes > 0 && c.StoreMaxBytes < c.MaxSessionBytes {
		return fmt.Errorf("store-max-bytes: %d is below max-session-bytes (%d): one session must fit in the store", c.StoreMaxBytes, c.MaxSessionBytes)
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"max-client-connections", int64(c.MaxClientConnections)},
		{"header-timeout", int64(c.HeaderTimeout)},
		{"max-sessions", int64(c.MaxSessions)},
		{"max-client-sessions", int64(c.MaxClientSessions)},
		{"max-finished-sessions", int64(c.MaxFinishedSessions)},
		{"store-max-bytes", c.StoreMaxBytes},
	} {
		if n.v < 0 {
			return fmt.Errorf("%s: %d is negative; give a positive value, or 0 for the default", n.name, n.v)
		}
	}
	switch c.TruncationPolicy {
	case "", protocol.TruncationKeep, protocol.TruncationIncompleteFile, protocol.TruncationWriteWithNote:
	default:
		return fmt.Errorf("truncation-policy: %q is not keep, incomplete_file or write_with_note", c.TruncationPolicy)
	}
	return nil
}

// Version is the daemon's version: the module version when built from a
// tagged module, else "devel".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Run serves until ctx is cancelled, then stops gracefully: no new
// connections, requests already being handled finish, the store is closed.
// ready, if not nil, is called once the socket accepts connections.
func Run(ctx context.Context, cfg Config, ready func()) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if armed := failpoint.Armed(); len(armed) > 0 {
		log.Warn("test failpoints are armed: this daemon will kill itself on purpose", "env", failpoint.EnvVar, "points", armed)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	roots, added, err := startRoots(cfg, log)
	if err != nil {
		return err
	}
	guard, err := pathguard.NewProtected(roots, cfg.Protection())
	if err != nil {
		return fmt.Errorf("allow-root: %w", err)
	}
	dbPath := filepath.Join(cfg.StateDir, StoreFile)
	st, err := store.Open(dbPath, store.Options{})
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%w: state directory %s is in use (%s is locked); stop the other daemon or pick another --state-dir",
			ErrAlreadyRunning, cfg.StateDir, dbPath)
	}
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	defer st.Close()

	rec := cfg.Trace
	if rec == nil {
		rec = trace.Discard{}
	}
	// A *trace.Tracer keeps events in this store: attach it before the
	// engine records anything, and close it (flushing its queue) before
	// the store closes.
	tracer, _ := cfg.Trace.(*trace.Tracer)
	var rejected trace.Recorder
	if tracer != nil {
		if err := tracer.Attach(st); err != nil {
			return fmt.Errorf("opening the trace store: %w", err)
		}
		defer tracer.Close()
		rejected = tracer.Rejected()
	} else {
		lim := trace.NewLimiter(rec, trace.LimiterOptions{})
		defer lim.Stop()
		rejected = lim
	}
	owners := newOwners(log)
	// The watcher reports to the engine, which needs the watcher to exist
	// first; events before the engine is up are caught at finalize by hash.
	var engine atomic.Pointer[session.Manager]
	watcher, err := watch.New(func(ev watch.Event) {
		if m := engine.Load(); m != nil {
			m.TargetChanged(ev.Path, string(ev.Kind))
		}
	}, watch.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("starting the file watcher: %w", err)
	}
	defer watcher.Close()
	turns, err := openCheckpoints(cfg, st, guard, rec, log)
	if err != nil {
		return err
	}
	defer turns.Close()
	notify := func(id, method string, params any) {
		if method == protocol.NotifySessionFinalized {
			if r, ok := params.(protocol.FinalizeResult); ok {
				turns.SessionWrote(id, r.TargetFile, r.FileSHA256)
				for _, f := range r.Files {
					turns.SessionWrote(id, cmp.Or(f.MovedTo, f.TargetFile), f.SHA256)
				}
			}
		}
		owners.notify(id, method, params)
	}
	mgr, err := session.New(session.Config{
		Store:               st,
		Guard:               guard,
		MaxChunkBytes:       cfg.MaxChunkBytes,
		MaxSessionBytes:     cfg.MaxSessionBytes,
		IdleTimeout:         cfg.IdleTimeout,
		AutoFinalize:        cfg.AutoFinalize,
		TruncationPolicy:    cfg.TruncationPolicy,
		Retention:           cfg.Retention,
		SummaryRetention:    cfg.SummaryRetention,
		Logger:              log,
		Notify:              notify,
		TurnOf:              turns.OpenTurn,
		Trace:               rec,
		Watcher:             watcher,
		Validation:          cfg.Validation,
		ValidateMaxBytes:    cfg.ValidateMaxBytes,
		MaxAttempts:         cfg.MaxAttempts,
		MaxSessions:         cfg.MaxSessions,
		MaxClientSessions:   cfg.MaxClientSessions,
		MaxFinishedSessions: cfg.MaxFinishedSessions,
		StoreMaxBytes:       cfg.StoreMaxBytes,
	})
	if err != nil {
		return err
	}
	defer mgr.Close()
	engine.Store(mgr)
	turns.FollowRoots(mgr.Guard)
	sp, err := openSpool(cfg, mgr, rec, log)
	if err != nil {
		return err
	}
	defer sp.Close()
	ln, err := listen(cfg.Socket)
	if err != nil {
		return err
	}
	defer ln.Close()
	if ln.sharedDir {
		log.Warn("the socket's directory is open to other users; the socket itself is 0600 and peers of other uids are refused",
			"dir", filepath.Dir(cfg.Socket))
	}

	started := time.Now().UTC()
	always, byDefault := guard.ProtectedList()
	protected := append(always, byDefault...)
	var rules []protocol.ProtectedRule
	for _, r := range guard.Rules() {
		rules = append(rules, protocol.ProtectedRule{Rule: r.Rule, Pattern: r.Pattern, Why: r.Why})
	}
	chunkLimit, sessionLimit := mgr.Limits()
	nofile := fdLimit()
	maxConns := connectionLimit(cfg.MaxConnections, nofile, log)
	tr := transport{
		limits: jsonrpc.Limits{
			MaxMessage:       jsonrpc.MaxMessageBytes(chunkLimit),
			MaxInflight:      cmp.Or(cfg.MaxInflight, DefaultMaxInflight),
			MaxInflightBytes: jsonrpc.DefaultMaxInflightBytes,
			Total:            jsonrpc.NewBudget(DefaultMaxInflightTotalBytes),
			HeaderTimeout:    cmp.Or(cfg.HeaderTimeout, DefaultHeaderTimeout),
		},
		conns:       newConnSet(maxConns, clientShare(cfg.MaxClientConnections, maxConns), StatusReserve),
		idleTimeout: cmp.Or(cfg.ConnIdleTimeout, DefaultConnIdleTimeout),
	}
	// A session counts as driven while it is not finished: open,
	// truncated or needing corrections.
	tr.drives = func(c *conn) bool {
		return owners.drives(c, func(id string) bool {
			info, err := mgr.Get(id)
			return err == nil && info.Stage.Unfinished()
		})
	}
	var inflight sync.WaitGroup
	appends, _ := rec.(trace.AppendRecorder)
	h := &handler{
		appends:  appends,
		mgr:      mgr,
		turns:    turns,
		log:      log,
		order:    newSessionOrder(),
		owners:   owners,
		trace:    rec,
		rejected: rejected,
		traces:   tracer,
		inflight: &inflight,
		workers:  newWorkers(),
		roots: &rootAdder{stateDir: cfg.StateDir, protect: cfg.Protection(), mgr: mgr, log: log,
			given: roots, added: added},
		status: func() protocol.StatusResult {
			var ts *protocol.TraceStats
			if tracer != nil {
				s := tracer.Stats()
				ts = &s
			}
			var ss *protocol.StoreStats
			if s, err := mgr.StoreStats(); err == nil {
				ss = &s
			}
			return protocol.StatusResult{
				Version:              Version(),
				ProtocolVersion:      protocol.Version,
				PID:                  os.Getpid(),
				Socket:               cfg.Socket,
				StateDir:             cfg.StateDir,
				AllowedRoots:         mgr.Guard().Roots(),
				StartedAt:            started,
				OpenSessions:         mgr.OpenCount(),
				MaxChunkBytes:        chunkLimit,
				MaxSessionBytes:      sessionLimit,
				MaxMessageBytes:      tr.limits.MaxMessage,
				MaxInflight:          tr.limits.MaxInflight,
				MaxConnections:       tr.conns.limit,
				MaxClientConnections: tr.conns.perClient,
				MaxSessions:          mgr.Caps().MaxSessions,
				MaxClientSessions:    mgr.Caps().MaxClientSessions,
				StoreMaxBytes:        cfg.StoreMaxBytes,
				Store:                ss,
				Connections:          tr.conns.count(),
				FDLimit:              nofile,
				Methods:              protocol.Methods,
				Features:             protocol.Features,
				ProtectedPaths:       protected,
				AllowedProtected:     cfg.AllowProtected,
				ProtectedRules:       rules,
				Trace:                ts,
				Checkpoints:          ptr(turns.Status()),
			}
		},
	}
	log.Info("oriond serving", "socket", cfg.Socket, "state_dir", cfg.StateDir,
		"allowed_roots", guard.Roots(), "version", Version(), "pid", os.Getpid(),
		"max_connections", tr.conns.limit, "max_client_connections", tr.conns.perClient,
		"max_sessions", mgr.Caps().MaxSessions, "max_client_sessions", mgr.Caps().MaxClientSessions,
		"store_max_bytes", cfg.StoreMaxBytes, "max_inflight", tr.limits.MaxInflight,
		"max_message_bytes", tr.limits.MaxMessage, "rlimit_nofile", nofile)
	if ready != nil {
		ready()
	}
	err = serve(ctx, ln, h, tr, log)
	inflight.Wait()
	h.workers.close()
	log.Info("oriond stopped")
	return err
}

// DefaultMaxInflightTotalBytes bounds the frame bytes of requests read and
// not yet answered across every connection. Each connection has its own
// bound (DefaultMaxInflightBytes), but a client with a thousand
// connections would multiply it: this one keeps the daemon's memory
// bounded whatever the number of connections. A connection that finds it
// used up stops being read until replies free some of it.
const DefaultMaxInflightTotalBytes = 256 << 20

// DefaultMaxInflight is how many requests of one connection may be read
// and not yet answered (jsonrpc.DefaultMaxInflight).
const DefaultMaxInflight = jsonrpc.DefaultMaxInflight

// transport are the limits serve applies to every connection.
type transport struct {
	limits jsonrpc.Limits
	conns  *connSet
	// idleTimeout closes idle connections (negative: never); drives
	// reports whether a connection drives an unfinished session.
	idleTimeout time.Duration
	drives      func(*conn) bool
}

// serve accepts connections until ctx is done, then closes them all. Only
// ctx or a listener that fails for good ends it: running out of
// descriptors makes it wait and try again.
func serve(ctx context.Context, ln net.Listener, h *handler, tr transport, log *slog.Logger) error {
	uid := os.Getuid()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer tr.conns.closeAll()
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go tr.conns.sweepIdle(sweepCtx, tr.idleTimeout, tr.drives, log)
	var (
		backoff        acceptBackoff
		refusals       logEvery
		acceptFailures logEvery
	)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if transientAccept(err) {
				d := backoff.next()
				if n, ok := acceptFailures.note(time.Now()); ok {
					log.Warn("accepting a connection failed; retrying", "err", err, "retry_in", d,
						"connections", tr.conns.count(), "failures", n)
				}
				sleepCtx(ctx, d)
				continue
			}
			return fmt.Errorf("accepting: %w", err)
		}
		backoff.reset()
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			continue
		}
		peer, pid, err := paths.PeerCred(uc)
		if err != nil || peer != uid {
			log.Warn("refusing a connection from another user", "peer_uid", peer, "peer_pid", pid, "err", err)
			c.Close()
			continue
		}
		entry := &conn{uid: peer, pid: pid, name: peerProcess(pid)}
		entry.touch(time.Now())
		if why := tr.conns.add(entry); why == refusedFull || why == refusedShare {
			if n, ok := refusals.note(time.Now()); ok {
				log.Warn("refusing connections: too many connections", "max_connections", tr.conns.limit,
					"max_client_connections", tr.conns.perClient, "pid", pid, "share", why == refusedShare, "refused", n)
			}
			refuse(c, why, pid, tr.conns, log)
			continue
		}
		entry.stream = jsonrpc.NewServerStream(c, tr.limits, log)
		entry.stream.OnFrame(func() { entry.touch(time.Now()) })
		entry.stream.OnCancel(entry.cancel)
		rpc := jsonrpc2.NewConn(ctx, entry.stream, connHandler{h: h, c: entry},
			jsonrpc2.SetLogger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)), entry.stream.OnSend())
		entry.bind(rpc)
		go func() {
			<-rpc.DisconnectNotify()
			tr.conns.remove(entry)
			h.owners.drop(entry)
		}()
	}
}
