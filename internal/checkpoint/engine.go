// Package checkpoint records the state of workspaces at instants
// (checkpoints), the turns of agents between two of them, and undoes a
// turn whoever wrote its bytes, never overwriting a later change.
//
// Between checkpoints a watcher notes which directories changed; a
// checkpoint rescans just those against the previous state (a stat cache
// as git's index keeps: size, times, inode, mode) and stores the content of
// each changed file once, by hash, in the blob store. When the watcher
// cannot vouch for what it saw (queue overflow, watch limit, a restart) the
// checkpoint scans everything against the stat cache instead.
//
// Store layout (bbolt buckets, JSON values):
//
//	checkpoint_workspaces  root -> wsRecord (its id, last checkpoint, open turn)
//	checkpoint_index       ws id NUL path -> Entry (the state at the last checkpoint; empty value: deleted)
//	checkpoint_checkpoints checkpoint id -> cpRecord (what changed since the previous one)
//	checkpoint_turns       turn id -> turnRecord
//	checkpoint_ops         operation id -> opRecord (an undo or a redo, its journal)
//	checkpoint_writes      turn id NUL path -> sessionWrite (an Orion session's write during the open turn)
//
// Ids are UUIDv7, so keys sort by time: the newest turns are read first
// with a reverse scan, and retention walks from the oldest.
package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// Buckets.
const (
	bucketWorkspaces  = "checkpoint_workspaces"
	bucketIndex       = "checkpoint_index"
	bucketCheckpoints = "checkpoint_checkpoints"
	bucketTurns       = "checkpoint_turns"
	bucketOps         = "checkpoint_ops"
	bucketWrites      = "checkpoint_writes"
)

// freeAfterBytes: a checkpoint that read more returns the memory to the
// system at once.
const freeAfterBytes = 4 << 20

// FailpointCheckpointCommit is passed after a checkpoint stored its new
// contents and before it records them, for crash tests.
const FailpointCheckpointCommit = "checkpoint-commit"

// Defaults of the limits.
const (
	DefaultMaxFileBytes      = 16 << 20
	DefaultMaxWorkspaceFiles = 200_000
	DefaultMaxWorkspaceBytes = 4 << 30
	DefaultRetention         = 7 * 24 * time.Hour
	// DefaultMaxDirty bounds the directories the watcher remembers
	// between two checkpoints; past it, one full scan.
	DefaultMaxDirty = 16384
	// EnvMaxDirty overrides DefaultMaxDirty, for tests that make the
	// watcher's queue overflow on purpose.
	EnvMaxDirty = "ORION_TEST_CHECKPOINT_MAX_DIRTY"
)

// Config is what an Engine needs.
type Config struct {
	Store *store.Store
	Blobs blobstore.Store
	Guard *pathguard.Guard
	// FS writes what an undo restores, refusing protected paths; RawFS,
	// over the same roots with only the Always protections, is used only
	// to put a protected path back to the content recorded at a turn's
	// start. The engine owns both.
	FS, RawFS *confine.FS
	Always    []string
	// StateDir holds the watchers' sync directories.
	StateDir string
	// Home is never a workspace itself.
	Home string
	// GlobalExcludes is the person's global git excludes file ("": asked
	// of git, then $XDG_CONFIG_HOME/git/ignore).
	GlobalExcludes    string
	MaxFileBytes      int64
	MaxWorkspaceFiles int64
	MaxWorkspaceBytes int64
	Retention         time.Duration
	// StoreMaxBytes: past it, the oldest unpinned checkpoints go first.
	StoreMaxBytes int64
	MaxDirty      int
	Logger        *slog.Logger
	Trace         trace.Recorder
	Clock         clock.Clock
}

// Engine records checkpoints and turns and undoes them.
type Engine struct {
	cfg        Config
	mu         sync.Mutex
	ws         map[string]*workspace
	dropped    int64
	closed     bool
	retaining  bool
	lastRetain time.Time
	wg         sync.WaitGroup
	// rootsMu guards roots: the guard in force and the FS and RawFS for
	// it, extended when the daemon allows a root while it runs.
	rootsMu sync.Mutex
	roots   access
	follow  func() *pathguard.Guard
	// sweepMu: checkpoints and operations hold it shared from storing
	// blobs to recording what refers to them; a sweep holds it alone.
	sweepMu sync.RWMutex
	// resultMu guards an operation's results while its files are written.
	resultMu sync.Mutex
}

// access is a guard and the confined views of its roots.
type access struct {
	guard   *pathguard.Guard
	fs, raw *confine.FS
}

// FollowRoots makes the engine use the guard guard returns, extending its
// views of the roots when a root is added while the daemon runs.
func (e *Engine) FollowRoots(guard func() *pathguard.Guard) {
	e.rootsMu.Lock()
	e.follow = guard
	e.rootsMu.Unlock()
}

// access returns the guard in force, FS and RawFS.
func (e *Engine) access() access {
	e.rootsMu.Lock()
	defer e.rootsMu.Unlock()
	if e.follow == nil {
		return e.roots
	}
	g := e.follow()
	if g == nil || g == e.roots.guard {
		return e.roots
	}
	fs, err := e.roots.fs.Extend(g)
	if err != nil {
		e.cfg.Logger.Warn("checkpoints: opening a new allowed root", "err", err)
		return e.roots
	}
	next := access{guard: g, fs: fs, raw: e.roots.raw}
	if e.roots.raw != nil {
		rg, err := pathguard.NewProtected(g.Roots(), pathguard.Protection{Always: e.cfg.Always})
		if err == nil {
			if raw, err := e.roots.raw.Extend(rg); err == nil {
				next.raw = raw
			}
		}
	}
	e.roots = next
	return next
}

// workspace is one recorded workspace. Its mutex serializes checkpoints,
// turns and undos there.
type workspace struct {
	mu   sync.Mutex
	root string
	rec  wsRecord
	t    *tree
	w    *watcher
	// fullReason is why the next checkpoint scans everything ("" for a
	// watched one); lastScan what the last one did, for daemon.status.
	fullReason string
	lastScan   string
	// writes are the Orion sessions' writes during the open turn: path ->
	// session id and the sha256 it wrote, kept in checkpoint_writes too
	// so that a turn open across a restart still names its writers.
	// writesMu guards them, and open mirrors rec.OpenTurn, so a session's
	// finalize never waits for a checkpoint holding mu.
	writesMu sync.Mutex
	writes   map[string]sessionWrite
	open     atomic.Value
	// status is what daemon.status shows, published under mu.
	status atomic.Pointer[protocol.WorkspaceStatus]
}

// setRec replaces the workspace's record, under mu.
func (w *workspace) setRec(rec wsRecord) {
	w.rec = rec
	w.open.Store(rec.OpenTurn)
}

func (w *workspace) openTurn() string {
	s, _ := w.open.Load().(string)
	return s
}

func (w *workspace) resetWrites() {
	w.writesMu.Lock()
	w.writes = map[string]sessionWrite{}
	w.writesMu.Unlock()
}

type sessionWrite struct {
	Session string `json:"session"`
	SHA256  string `json:"sha256"`
}

type wsRecord struct {
	Root           string `json:"root"`
	ID             string `json:"id"`
	LastCheckpoint string `json:"last_checkpoint,omitempty"`
	OpenTurn       string `json:"open_turn,omitempty"`
	TooBig         bool   `json:"too_big,omitempty"`
	Checkpoints    int    `json:"checkpoints"`
}

type cpRecord struct {
	ID        string    `json:"id"`
	Root      string    `json:"root"`
	Label     string    `json:"label,omitempty"`
	Pinned    bool      `json:"pinned,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Files     int64     `json:"files"`
	Bytes     int64     `json:"bytes"`
	// First marks a workspace's first checkpoint: Changes is not kept
	// (everything was created).
	First   bool     `json:"first,omitempty"`
	Changed int      `json:"changed"`
	Changes []Change `json:"changes,omitempty"`
	Stored  int64    `json:"stored"`
	Scan    string   `json:"scan"`
}

// New returns an engine and finishes any undo a crash interrupted.
func New(cfg Config) (*Engine, error) {
	cfg.MaxFileBytes = cmp.Or(cfg.MaxFileBytes, DefaultMaxFileBytes)
	cfg.MaxWorkspaceFiles = cmp.Or(cfg.MaxWorkspaceFiles, DefaultMaxWorkspaceFiles)
	cfg.MaxWorkspaceBytes = cmp.Or(cfg.MaxWorkspaceBytes, DefaultMaxWorkspaceBytes)
	cfg.Retention = cmp.Or(cfg.Retention, DefaultRetention)
	cfg.MaxDirty = cmp.Or(cfg.MaxDirty, DefaultMaxDirty)
	if cfg.StoreMaxBytes > 0 && cfg.MaxWorkspaceBytes > cfg.StoreMaxBytes/2 {
		// A workspace's first checkpoint must fit in the checkpoints'
		// half of the store, or it would crowd out the sessions' writes.
		cfg.MaxWorkspaceBytes = cfg.StoreMaxBytes / 2
	}
	if v := os.Getenv(EnvMaxDirty); v != "" {
		fmt.Sscan(v, &cfg.MaxDirty)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Trace == nil {
		cfg.Trace = trace.Discard{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Home == "" {
		cfg.Home = pathguard.HomeDir()
	}
	if cfg.GlobalExcludes == "" {
		cfg.GlobalExcludes = globalExcludes(cfg.Home)
	}
	e := &Engine{cfg: cfg, ws: map[string]*workspace{}, roots: access{guard: cfg.Guard, fs: cfg.FS, raw: cfg.RawFS}}
	if err := e.recover(); err != nil {
		return nil, err
	}
	return e, nil
}

// globalExcludes finds the person's global excludes file as git does:
// core.excludesFile, else $XDG_CONFIG_HOME/git/ignore.
func globalExcludes(home string) string {
	if git, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command(git, "config", "--global", "--path", "--get", "core.excludesFile").Output()
		if p := strings.TrimSpace(string(out)); err == nil && p != "" {
			return p
		}
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "ignore")
	}
	if home != "" {
		return filepath.Join(home, ".config", "git", "ignore")
	}
	return ""
}

// Close stops every watcher and closes the engine's FS and RawFS.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.wg.Wait()
	e.mu.Lock()
	wss := make([]*workspace, 0, len(e.ws))
	for _, w := range e.ws {
		wss = append(wss, w)
	}
	e.mu.Unlock()
	for _, w := range wss {
		w.mu.Lock()
		if w.w != nil {
			w.w.close()
			w.w = nil
		}
		w.mu.Unlock()
	}
	e.rootsMu.Lock()
	e.roots.fs.Close()
	if e.roots.raw != nil {
		e.roots.raw.Close()
	}
	e.rootsMu.Unlock()
}

func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// resolve checks a workspace root: inside the allowed roots, a directory,
// neither the home directory itself nor /.
func (e *Engine) resolve(root string) (string, error) {
	if root == "" {
		return "", missingField("workspace_root")
	}
	real, err := e.access().guard.Workspace(root)
	if err != nil {
		return "", pathError(err)
	}
	home := e.cfg.Home
	if rh, err := filepath.EvalSymlinks(home); err == nil {
		home = rh
	}
	if real == "/" || real == filepath.Clean(home) {
		pe := protocol.Errorf(protocol.CodePathNotAllowed, protocol.ReasonWorkspaceForbidden,
			"%s is the home directory or /, which is never a turn's workspace: give the project directory the agent works in", real)
		pe.Data.WorkspaceRoot = real
		return "", pe
	}
	return real, nil
}

// workspace returns the workspace of the resolved root, reading its
// record. Its tree is loaded by load, under its lock.
func (e *Engine) workspace(root string) (*workspace, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.ws[root]; w != nil {
		return w, nil
	}
	w := &workspace{root: root, writes: map[string]sessionWrite{}}
	found, err := getJSON(e.cfg.Store, bucketWorkspaces, []byte(root), &w.rec)
	if err != nil {
		return nil, err
	}
	if !found {
		w.rec = wsRecord{Root: root, ID: newID()}
	}
	if w.rec.OpenTurn != "" {
		// A turn open across a restart: its writers so far.
		prefix := []byte(w.rec.OpenTurn + "\x00")
		err := e.cfg.Store.ScanKVPrefix(bucketWrites, prefix, func(k, v []byte) (bool, error) {
			var sw sessionWrite
			if json.Unmarshal(v, &sw) == nil {
				w.writes[string(k[len(prefix):])] = sw
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	w.setRec(w.rec)
	e.ws[root] = w
	return w, nil
}

// load reads the workspace's recorded state and starts its watcher; the
// first checkpoint after scans everything against the stat cache.
func (e *Engine) load(w *workspace) error {
	if w.t != nil {
		return nil
	}
	t := newTree(w.root, e.cfg.GlobalExcludes)
	prefix := []byte(w.rec.ID + "\x00")
	err := e.cfg.Store.ScanKVPrefix(bucketIndex, prefix, func(k, v []byte) (bool, error) {
		if len(v) == 0 {
			return true, nil
		}
		en, err := unmarshalEntry(v)
		if err != nil {
			return false, err
		}
		t.set(string(k[len(prefix):]), en)
		return true, nil
	})
	if err != nil {
		return err
	}
	w.t = t
	w.fullReason = reasonRestart
	if w.w == nil {
		wt, err := newWatcher(w.root, filepath.Join(e.cfg.StateDir, "checkpoint-sync", w.rec.ID), e.cfg.MaxDirty)
		if err != nil {
			e.cfg.Logger.Warn("checkpoints: no watcher, every checkpoint scans", "workspace", w.root, "err", err)
		}
		w.w = wt
	}
	return nil
}

// checkpoint records the workspace now. It returns nil and no error when
// the workspace is too big (rec.TooBig says so).
func (e *Engine) checkpoint(w *workspace, label string, pin bool, persistAlways bool) (*cpRecord, error) {
	if err := e.load(w); err != nil {
		return nil, err
	}
	e.sweepMu.RLock()
	defer e.sweepMu.RUnlock()
	start := time.Now()
	full := w.fullReason
	var dirs []string
	if w.w != nil {
		if !w.w.sync(2 * time.Second) {
			full = cmp.Or(full, reasonSyncLost)
		}
		d, f := w.w.take()
		dirs = d
		full = cmp.Or(full, f)
	} else {
		full = cmp.Or(full, reasonNoWatcher)
	}
	first := w.rec.LastCheckpoint == "" || w.rec.TooBig
	if first {
		full = cmp.Or(full, "first")
	}
	s := &scan{t: w.t, maxFile: e.cfg.MaxFileBytes, maxFiles: e.cfg.MaxWorkspaceFiles, maxBytes: e.cfg.MaxWorkspaceBytes,
		started: start,
		flush:   func(b []blobstore.Blob) error { _, err := e.cfg.Blobs.Put(b); return err },
		has: func(h blobstore.Hash) bool {
			ok, _ := e.cfg.Blobs.Has(h)
			return ok
		}}
	if w.w != nil {
		s.onDir = w.w.watch
	}
	if first {
		// Count before reading anything: a workspace too big is refused
		// at the cost of its stat calls, not of hashing 200,000 files.
		count := &scan{t: newTree(w.root, e.cfg.GlobalExcludes), maxFile: e.cfg.MaxFileBytes,
			maxFiles: e.cfg.MaxWorkspaceFiles, maxBytes: e.cfg.MaxWorkspaceBytes, started: start, countOnly: true}
		if err := count.dir("", true); errors.Is(err, errTooBig) {
			return nil, e.tooBig(w, count)
		}
	}
	var err error
	if full != "" {
		err = s.dir("", true)
	} else {
		for _, abs := range dirs {
			rel, ok := w.t.relOf(abs)
			if !ok || (rel != "" && (w.t.entries[rel] == nil || w.t.entries[rel].Type != TypeDir)) {
				continue // not a recorded directory: its parent's scan finds it
			}
			if err = s.dir(rel, false); err != nil {
				break
			}
		}
		if err == nil && s.ignoreChanged {
			full = reasonIgnore
			err = s.dir("", true)
		}
	}
	if err == nil {
		err = s.flushPending()
	}
	if errors.Is(err, errTooBig) {
		return nil, e.tooBig(w, s)
	}
	if err != nil {
		// The tree may hold half a scan: reload it before the next one.
		w.t = nil
		return nil, protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "checkpoint of %s: %v", w.root, err)
	}
	w.fullReason = ""
	defer e.publish(w)
	w.lastScan = cmp.Or(full, "watch")
	if full == "" {
		w.lastScan = "watch"
	}
	if len(s.changes) == 0 && !persistAlways && !first && label == "" && !pin {
		if len(s.refreshed) > 0 {
			// Only stat fields moved (a touch, a racy entry settled):
			// keep them, so the next restart does not read those files.
			idx := make([]store.KV, 0, len(s.refreshed))
			for _, p := range s.refreshed {
				if en := w.t.entries[p]; en != nil {
					idx = append(idx, store.KV{Key: []byte(w.rec.ID + "\x00" + p), Value: en.marshalBinary()})
				}
			}
			if err := e.cfg.Store.PutKVs(store.Put{Bucket: bucketIndex, KVs: idx}); err != nil {
				e.cfg.Logger.Warn("checkpoints: storing the stat cache", "workspace", w.root, "err", err)
			}
		}
		return &cpRecord{ID: w.rec.LastCheckpoint, Root: w.root, Files: w.t.files, Bytes: w.t.bytes, Scan: w.lastScan}, nil
	}
	cp := &cpRecord{ID: newID(), Root: w.root, Label: label, Pinned: pin, CreatedAt: e.cfg.Clock.Now().UTC(),
		Files: w.t.files, Bytes: w.t.bytes, First: first, Changed: changedFiles(s.changes), Scan: w.lastScan}
	for _, c := range s.changes {
		if c.New != nil && c.New.Type == TypeFile && !c.New.Big {
			cp.Stored += c.New.Size
		}
	}
	if !first {
		cp.Changes = s.changes
	}
	idx := make([]store.KV, 0, len(s.changes)+len(s.refreshed))
	for _, c := range s.changes {
		var v []byte
		if c.New != nil {
			v = c.New.marshalBinary()
		}
		idx = append(idx, store.KV{Key: []byte(w.rec.ID + "\x00" + c.Path), Value: v})
	}
	for _, p := range s.refreshed {
		if en := w.t.entries[p]; en != nil {
			idx = append(idx, store.KV{Key: []byte(w.rec.ID + "\x00" + p), Value: en.marshalBinary()})
		}
	}
	failpoint.Hit(FailpointCheckpointCommit)
	rec := w.rec
	rec.LastCheckpoint = cp.ID
	rec.TooBig = false
	rec.Checkpoints++
	cpv, _ := json.Marshal(cp)
	wsv, _ := json.Marshal(rec)
	if err := e.cfg.Store.PutKVs(store.Put{Bucket: bucketIndex, KVs: idx},
		store.Put{Bucket: bucketCheckpoints, KVs: []store.KV{{Key: []byte(cp.ID), Value: cpv}}},
		store.Put{Bucket: bucketWorkspaces, KVs: []store.KV{{Key: []byte(w.root), Value: wsv}}}); err != nil {
		w.t = nil
		return nil, protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "storing the checkpoint of %s: %v", w.root, err)
	}
	w.setRec(rec)
	if cp.Stored > freeAfterBytes {
		// Recording read that much into memory, and storing it mapped
		// the store's pages around it: give both back now rather than
		// when the runtime's scavenger or the kernel get to it.
		debug.FreeOSMemory()
		if err := e.cfg.Store.DropMappedPages(); err != nil {
			e.cfg.Logger.Debug("checkpoints: dropping the store's mapped pages", "err", err)
		}
	}
	e.cfg.Trace.Record(trace.Event{Time: cp.CreatedAt, Type: protocol.TraceCheckpoint, Fields: map[string]any{
		"workspace_root": w.root, "checkpoint_id": cp.ID, "files": cp.Files, "changed": cp.Changed,
		"stored_bytes": cp.Stored, "scan": w.lastScan, "duration_ms": time.Since(start).Milliseconds()}})
	return cp, nil
}

// tooBig gives up recording w: no checkpoint, never a partial one.
func (e *Engine) tooBig(w *workspace, s *scan) error {
	files, size := s.t.files, s.t.bytes
	w.t = nil
	if w.w != nil {
		w.w.close()
		w.w = nil
	}
	w.rec.TooBig = true
	w.rec.LastCheckpoint = ""
	if v, err := json.Marshal(w.rec); err == nil {
		_ = e.cfg.Store.PutKV(bucketWorkspaces, []store.KV{{Key: []byte(w.root), Value: v}})
	}
	e.publish(w)
	e.cfg.Trace.Record(trace.Event{Time: e.cfg.Clock.Now(), Type: protocol.TraceCheckpointRefused, Fields: map[string]any{
		"workspace_root": w.root, "files": files, "bytes": size,
		"max_files": e.cfg.MaxWorkspaceFiles, "max_bytes": e.cfg.MaxWorkspaceBytes}})
	return tooBigError(w.root, e.cfg.MaxWorkspaceFiles, e.cfg.MaxWorkspaceBytes)
}

func tooBigError(root string, maxFiles, maxBytes int64) *protocol.Error {
	pe := protocol.Errorf(protocol.CodeWorkspaceTooBig, protocol.ReasonWorkspaceTooBig,
		"%s holds more than %d files or %d bytes that are not ignored, so it gets no checkpoints and its turns cannot be undone; "+
			"ignore generated directories in .gitignore or .orionignore, or raise --checkpoint-max-workspace-files / --checkpoint-max-workspace-bytes "+
			"(the bytes are also held to half of --store-max-bytes)",
		root, maxFiles, maxBytes)
	pe.Data.WorkspaceRoot = root
	pe.Data.Limit = maxFiles
	return pe
}

// Checkpoint takes a person's own checkpoint (checkpoint.create).
func (e *Engine) Checkpoint(p protocol.CheckpointCreateParams) (protocol.CheckpointInfo, error) {
	root, err := e.resolve(p.WorkspaceRoot)
	if err != nil {
		return protocol.CheckpointInfo{}, err
	}
	w, err := e.workspace(root)
	if err != nil {
		return protocol.CheckpointInfo{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cp, err := e.checkpoint(w, p.Label, p.Pin, true)
	if err != nil {
		return protocol.CheckpointInfo{}, err
	}
	e.retain()
	return protocol.CheckpointInfo{CheckpointID: cp.ID, WorkspaceRoot: root, Label: cp.Label, Pinned: cp.Pinned,
		CreatedAt: cp.CreatedAt, Files: int(cp.Files), Changed: cp.Changed, StoredBytes: cp.Stored,
		Recording: e.recording(w)}, nil
}

func (e *Engine) recording(w *workspace) string {
	switch {
	case w.rec.TooBig:
		return protocol.RecordingTooBig
	case w.w == nil:
		return protocol.RecordingScanning
	}
	if _, limited := w.w.state(); limited {
		return protocol.RecordingScanning
	}
	return protocol.RecordingWatching
}

// Status describes the recorded workspaces and the blob store.
func (e *Engine) Status() protocol.CheckpointStatus {
	e.mu.Lock()
	wss := make([]*workspace, 0, len(e.ws))
	for _, w := range e.ws {
		wss = append(wss, w)
	}
	dropped := e.dropped
	e.mu.Unlock()
	st := protocol.CheckpointStatus{Workspaces: []protocol.WorkspaceStatus{}, Dropped: dropped}
	for _, w := range wss {
		// The snapshot, not the lock: a first checkpoint holds that for
		// minutes, and daemon.status must answer at once.
		if ws := w.status.Load(); ws != nil {
			st.Workspaces = append(st.Workspaces, *ws)
		} else {
			st.Workspaces = append(st.Workspaces, protocol.WorkspaceStatus{WorkspaceRoot: w.root,
				Recording: protocol.RecordingScanning, Reason: "first", OpenTurn: w.openTurn()})
		}
	}
	st.Blobs, st.StoredBytes = e.cfg.Blobs.Stats()
	return st
}

// publish stores w's status for daemon.status; the caller holds w.mu.
func (e *Engine) publish(w *workspace) {
	ws := protocol.WorkspaceStatus{WorkspaceRoot: w.root, Recording: e.recording(w), OpenTurn: w.rec.OpenTurn,
		Checkpoints: w.rec.Checkpoints}
	if w.w != nil {
		var limited bool
		ws.Watches, limited = w.w.state()
		if limited {
			ws.Reason = reasonWatchLimit
		}
	}
	if w.lastScan != "watch" && w.lastScan != "" && ws.Reason == "" {
		// The last checkpoint scanned everything: say why.
		ws.Reason = w.lastScan
		if ws.Recording == protocol.RecordingWatching && (w.lastScan == reasonOverflow || w.lastScan == reasonSyncLost) {
			ws.Recording = protocol.RecordingScanning
		}
	}
	w.status.Store(&ws)
}

func getJSON(st *store.Store, bucket string, key []byte, v any) (bool, error) {
	found := false
	err := st.ScanKV(bucket, key, func(k, val []byte) (bool, error) {
		if bytes.Equal(k, key) {
			found = true
			return false, json.Unmarshal(val, v)
		}
		return false, nil
	})
	return found, err
}

func putJSON(bucket string, key string, v any) store.Put {
	b, _ := json.Marshal(v)
	return store.Put{Bucket: bucket, KVs: []store.KV{{Key: []byte(key), Value: b}}}
}

func missingField(field string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMissingField, "%s is required", field)
	e.Data.Field = field
	return e
}

// pathError maps a pathguard refusal onto the wire's codes.
func pathError(err error) error { return pathguard.WireError(err, "") }

// changedFiles counts the changes to files and links, the entries Files
// counts: a directory made or removed is not a changed file, and counting
// it made a first checkpoint report more files changed than it holds.
func changedFiles(changes []Change) int {
	n := 0
	for _, c := range changes {
		if (c.Old != nil && c.Old.Type != TypeDir) || (c.New != nil && c.New.Type != TypeDir) {
			n++
		}
	}
	return n
}
