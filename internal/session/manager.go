// Package session is oriond's engine: the write-session state machine, the
// end-marker scanner, and the journal-backed append and finalize paths, with
// idle prompts, truncation, continuation and crash recovery. It knows
// nothing about sockets or JSON-RPC; the daemon decodes requests and calls it.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/protocol"
)

// Defaults for Config.
const (
	DefaultMaxChunkBytes   = 1 << 20
	DefaultMaxSessionBytes = 256 << 20
	DefaultIdleTimeout     = 2 * time.Second
	DefaultAutoFinalize    = 30 * time.Second
)

// Notifier delivers a notification to the client that drives a session.
type Notifier func(sessionID, method string, params any)

// TargetWatcher is told which targets have open sessions, so it can report
// external changes to them through Manager.TargetChanged.
type TargetWatcher interface {
	Add(path string) error
	Remove(path string)
}

// Config holds the Manager's collaborators, limits and timeouts.
type Config struct {
	Store           *store.Store
	Guard           *pathguard.Guard
	MaxChunkBytes   int64
	MaxSessionBytes int64
	// IdleTimeout is how long without a chunk before session.idle;
	// AutoFinalize how long before a session without its marker ends as
	// truncated. Sessions may ask for their own.
	IdleTimeout      time.Duration
	AutoFinalize     time.Duration
	TruncationPolicy protocol.TruncationPolicy
	// Retention is how long an unfinished session may sit untouched before
	// it expires; SummaryRetention how long a finished one's summary is kept.
	Retention        time.Duration
	SummaryRetention time.Duration
	Logger           *slog.Logger
	Notify           Notifier
	Watcher          TargetWatcher
	// TurnOf names the turn open in the workspace holding a target, if
	// any: the session belongs to it. Nil: no turns.
	TurnOf func(target string) string
	// Trace receives an event for every stage change, write and conflict.
	Trace trace.Recorder
	// Validation is the daemon's validation policy; sessions may override
	// it. ValidateMaxBytes bounds the content checked in memory and
	// MaxAttempts the corrected attempts of a refused write.
	Validation       validate.Policies
	ValidateMaxBytes int64
	MaxAttempts      int
	// CheckMemoryBytes bounds the bytes all finalizes check in memory at
	// once (0: DefaultCheckMemoryBytes).
	CheckMemoryBytes int64
	// MaxSessions and MaxClientSessions cap the unfinished sessions of
	// the daemon and of one owner (see BeginAs); zero: the defaults.
	MaxSessions       int
	MaxClientSessions int
	// MaxFinishedSessions bounds the finished sessions kept for their
	// summaries (0: DefaultMaxFinishedSessions).
	MaxFinishedSessions int
	// StoreMaxBytes caps the store's used bytes (0: no cap); see
	// storecap.go for what goes first.
	StoreMaxBytes int64
	// StreamFileBytes is the size, announced at begin, from which a whole
	// file's session also writes its chunks into its new file as they
	// arrive, however small (streamed.go; chunks of 256 KiB always do);
	// 0: DefaultStreamFileBytes, negative: never.
	StreamFileBytes int64
	// Clock and NewID are injected so tests control time and ids.
	Clock clock.Clock
	NewID func() string
}

// Manager owns every session. Calls on different sessions run concurrently
// (their journal appends share group commits); calls on one session are
// serialized by that session's lock.
type Manager struct {
	cfg Config
	// roots is the guard and the descriptors of its roots, swapped as one
	// when a root is allowed while the daemon runs (SetGuard).
	roots   atomic.Pointer[access]
	rootsMu sync.Mutex

	mu       sync.Mutex
	sessions map[string]*entry
	txs      map[string]*txEntry
	closed   bool
	caps     sessionCaps
	cap      storeCap
	// heldBases is how many bytes of targets' content at begin the
	// sessions not journaled yet hold in memory (heldBase).
	heldBases atomic.Int64
	// checks bounds the content finalizes check in memory at once.
	checks checkBudget
	// streams counts the streamed files open, and streamsNamed the
	// finalizes that named theirs (for tests).
	streams      streamBudget
	streamsNamed atomic.Int64
}

type entry struct {
	// mu guards the entry. Appends hold it only to queue their chunk
	// (pipeline.go); any other Lock waits for the chunks in flight.
	mu  entryLock
	rec record
	// info is rec as last journaled, read by List, Get and OpenCount
	// without e.mu: a finalize streaming a large file (or a stuck write)
	// holds e.mu, and status and listings must still answer.
	info atomic.Pointer[protocol.SessionInfo]
	// Timers for the idle prompt and auto-finalize; reset by every chunk.
	idle, auto clock.Timer
	// watching is true while the target is registered with the watcher.
	watching bool
	// owner is the client that opened the session ("" for one begun
	// without one, or loaded from the store), for the per-client cap.
	owner string
	// stream is the session's streamed file, if any, and streamTried is
	// set once one was started or refused (streamed.go); guarded by mu.
	stream      *streamed
	streamTried bool
}

// New loads every journaled session from the store, finishes or rolls back
// finalizes a crash interrupted, and restarts the timers of open sessions.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Guard == nil {
		return nil, errors.New("session: Config needs a Store and a Guard")
	}
	if cfg.MaxChunkBytes <= 0 {
		cfg.MaxChunkBytes = DefaultMaxChunkBytes
	}
	if cfg.MaxSessionBytes <= 0 {
		cfg.MaxSessionBytes = DefaultMaxSessionBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.AutoFinalize <= 0 {
		cfg.AutoFinalize = DefaultAutoFinalize
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.SummaryRetention <= 0 {
		cfg.SummaryRetention = DefaultSummaryRetention
	}
	if cfg.TruncationPolicy == "" {
		cfg.TruncationPolicy = protocol.TruncationKeep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	if cfg.ValidateMaxBytes <= 0 {
		cfg.ValidateMaxBytes = DefaultValidateMaxBytes
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.StreamFileBytes == 0 {
		cfg.StreamFileBytes = DefaultStreamFileBytes
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxClientSessions <= 0 {
		cfg.MaxClientSessions = DefaultMaxClientSessions
	}
	if cfg.MaxFinishedSessions <= 0 {
		cfg.MaxFinishedSessions = DefaultMaxFinishedSessions
	}
	if err := cfg.Validation.Validate(); err != nil {
		return nil, fmt.Errorf("validation policy: %w", err)
	}
	if cfg.Trace == nil {
		cfg.Trace = trace.Discard{}
	}
	if cfg.Notify == nil {
		cfg.Notify = func(string, string, any) {}
	}
	files, err := confine.New(cfg.Guard)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, sessions: make(map[string]*entry), txs: make(map[string]*txEntry),
		caps:   sessionCaps{live: make(map[*entry]struct{}), pendingByOwner: make(map[string]int)},
		checks: newCheckBudget(cfg.CheckMemoryBytes)}
	m.roots.Store(&access{guard: cfg.Guard, files: files})
	err = cfg.Store.ForEachMeta(func(id string, meta []byte) error {
		var r record
		if err := json.Unmarshal(meta, &r); err != nil {
			// One unreadable record must not keep the daemon from serving
			// every other session; it stays in the store for inspection.
			cfg.Logger.Error("skipping unreadable session record", "session", id, "err", err)
			return nil
		}
		e := &entry{rec: r}
		e.rec.published = &e.info
		e.publish()
		m.sessions[id] = e
		m.caps.live[e] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading sessions: %w", err)
	}
	for _, e := range m.sessions {
		m.catchUp(e)
	}
	// Transactions first: a roll-back rewrites targets, which sessions
	// must not see as external changes once they watch them again.
	if err := m.recoverTxs(); err != nil {
		return nil, fmt.Errorf("loading transactions: %w", err)
	}
	for _, e := range m.sessions {
		m.recover(e)
	}
	m.startJanitor()
	return m, nil
}

// Close stops every timer and watch; the store stays open for its owner
// to close.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	entries := m.entries()
	m.mu.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		m.stopTimers(e)
		m.unwatch(e)
		m.dropStream(e)
		if e.rec.unjournaled {
			// A graceful stop keeps what a restart is expected to keep:
			// begun sessions too, though nothing was appended to them.
			if err := m.put(&e.rec); err != nil {
				m.cfg.Logger.Warn("journaling a begun session at stop", "session", e.rec.ID, "err", err)
			}
		}
		e.mu.Unlock()
	}
	m.rootsMu.Lock()
	m.fs().Close()
	m.rootsMu.Unlock()
}

// entries returns every entry; m.mu must be held.
func (m *Manager) entries() []*entry {
	es := make([]*entry, 0, len(m.sessions))
	for _, e := range m.sessions {
		es = append(es, e)
	}
	return es
}

// Limits returns the chunk and session size limits in force.
func (m *Manager) Limits() (chunk, session int64) {
	return m.cfg.MaxChunkBytes, m.cfg.MaxSessionBytes
}

func (m *Manager) lookup(id string) (*entry, error) {
	if id == "" {
		return nil, missingField("session_id")
	}
	m.mu.Lock()
	e, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return nil, notFound(id)
	}
	return e, nil
}

// EndMarker returns the end marker for a session id: unique per session,
// short enough for a model to reproduce exactly, and unlike anything that
// occurs in ordinary files.
func EndMarker(id string) string {
	hexID := strings.ReplaceAll(id, "-", "")
	if len(hexID) > 12 {
		hexID = hexID[:12]
	}
	return "__END_WRITE_" + hexID + "__"
}

// Instructions is the text the model receives as the WritePlanTool_begin
// result: what to write, how, and how to end (protocol/prompts.go).
func Instructions(target string, op protocol.Operation, marker string) string {
	return protocol.Instructions(op, target, marker)
}

// Begin opens a session after checking the operation and the target.
func (m *Manager) Begin(p protocol.BeginParams) (protocol.BeginResult, error) {
	return m.begin(p, m.cfg.NewID, time.Time{}, "")
}

// begin is Begin with the session's id and creation time chosen by the
// caller (a zero time means now), and the transaction it belongs to.
func (m *Manager) begin(p protocol.BeginParams, newID func() string, createdAt time.Time, txID string) (protocol.BeginResult, error) {
	return m.beginAs("", p, newID, createdAt, txID)
}

// beginAs is begin for a session of owner.
func (m *Manager) beginAs(owner string, p protocol.BeginParams, newID func() string, createdAt time.Time, txID string) (protocol.BeginResult, error) {
	// One view of the files for the request, as a session.write has: the
	// target is resolved, checked and read with one look for
	// repositories above it and one open of its directory, where each
	// step looked again.
	files := m.fs().Scoped()
	defer files.Close()
	r, err := m.prepare(files, false, p, newID, createdAt, txID)
	if err != nil {
		return protocol.BeginResult{}, err
	}
	res, err := m.open(&r, owner, p.TargetFile)
	if err == nil && p.Supersedes != "" {
		m.markSuperseded(p.Supersedes, r.ID)
	}
	return res, err
}

// prepare checks the params and the target of a new session and returns
// its record, not yet journaled. files is the request's view of the files
// (confine.FS.Scoped), nil for none; whole is set for a session.write,
// whose request reads its target once for every later step.
func (m *Manager) prepare(files *confine.FS, whole bool, p protocol.BeginParams, newID func() string, createdAt time.Time, txID string) (record, error) {
	// The daemon checked the request already; a spooled session's
	// metadata.json was never checked, and the record keeps every field.
	if err := p.Check(); err != nil {
		return record{}, err
	}
	switch p.Operation {
	case protocol.OpCreate, protocol.OpOverwrite, protocol.OpAppend, protocol.OpPatch, protocol.OpEdit:
	case "":
		return record{}, missingField("operation")
	default:
		return record{}, unknownOperation(p.Operation)
	}
	if p.TargetFile == "" {
		return record{}, missingField("target_file")
	}
	switch p.TruncationPolicy {
	case "", protocol.TruncationKeep, protocol.TruncationIncompleteFile, protocol.TruncationWriteWithNote:
	default:
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"unknown truncation_policy %q; use keep, incomplete_file or write_with_note", p.TruncationPolicy)
		e.Data.Field = "truncation_policy"
		return record{}, e
	}
	if p.Validation != nil {
		if err := toPolicies(p.Validation).Validate(); err != nil {
			e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams, "validation: %v", err)
			e.Data.Field = "validation"
			return record{}, e
		}
	}
	fsys := m.fs()
	if files != nil {
		fsys = files
	}
	target, err := fsys.Guard().ResolveIn(fsys.PathScope(), p.TargetFile, p.WorkspaceRoot)
	if err != nil {
		return record{}, pathError(err)
	}
	workspace := ""
	if p.WorkspaceRoot != "" {
		if workspace, err = m.guard().Workspace(p.WorkspaceRoot); err != nil {
			return record{}, pathError(err)
		}
	}
	attempt := 0
	if p.Supersedes != "" {
		if attempt, err = m.supersede(p.Supersedes, target); err != nil {
			return record{}, err
		}
	}
	// A session.write keeps what it read for its later steps (see
	// baseRead). A begin whose session may merge keeps it for keepBase.
	keep := int64(-1)
	switch {
	case whole:
		keep = m.cfg.ValidateMaxBytes
	case mergeable(p.Operation):
		keep = mergeMaxBytes
	}
	base, data, err := m.readTargetState(fsys, target, keep)
	if err != nil {
		return record{}, confinedError("", "reading the current target", err)
	}
	if err := m.checkExpected(p.ExpectedSHA256, base, target); err != nil {
		return record{}, err
	}
	if base.exists && p.Operation == protocol.OpCreate {
		return record{}, targetExists(target)
	}
	if err := checkPartialEdit(p, base.exists, target); err != nil {
		return record{}, err
	}
	now := m.cfg.Clock.Now()
	if createdAt.IsZero() {
		createdAt = now
	}
	id := newID()
	r := record{
		ID:               id,
		Intent:           p.Intent,
		RequestedPath:    p.TargetFile,
		WorkspaceRoot:    p.WorkspaceRoot,
		Workspace:        workspace,
		Target:           target,
		Operation:        p.Operation,
		Stage:            protocol.StageAwaitingContent,
		Scanner:          NewScanner(EndMarker(id)),
		BaseExists:       base.exists,
		BaseSize:         base.size,
		BaseSHA256:       base.sha256,
		IdleMS:           p.IdleMS,
		AutoFinalizeMS:   p.AutoFinalizeMS,
		ExpectedLines:    p.ExpectedLines,
		ExpectedBytes:    p.ExpectedBytes,
		TruncationPolicy: p.TruncationPolicy,
		Validation:       p.Validation,
		AllowLegacyDone:  p.AllowLegacyDone,
		PatchSpec:        p.PatchSpec,
		SkipBackup:       p.BackupRequired != nil && !*p.BackupRequired,
		Client:           p.Client,
		Attempt:          attempt,
		Supersedes:       p.Supersedes,
		TxID:             txID,
		TurnID:           m.turnOf(target),
		CreatedAt:        createdAt,
		UpdatedAt:        now,
	}
	if whole && (!base.exists || data != nil) {
		r.base = &baseRead{data: data}
	} else if !whole {
		r.atBegin = data
	}
	return r, nil
}

func (m *Manager) turnOf(target string) string {
	if m.cfg.TurnOf == nil {
		return ""
	}
	return m.cfg.TurnOf(target)
}

// open journals a new session record of owner, if it fits the caps on
// sessions, and starts its timers and watch.
func (m *Manager) open(r *record, owner, shownTarget string) (protocol.BeginResult, error) {
	adm, err := m.admit(owner)
	if err != nil {
		return protocol.BeginResult{}, err
	}
	defer adm.release()
	// The target at begin rides the record: a merge at finalize needs it
	// once the file has changed.
	base := m.keepBase(r)
	if r.TxID == "" && r.Supersedes == "" && r.ContinuesSession == "" && m.canHold(base) {
		// Journaled by the session's first write to the store, with its
		// first chunk as a rule (see record.unjournaled): begin costs no
		// sync. A session other records name (its transaction, the one
		// it supersedes or continues) is journaled before they are.
		r.unjournaled, r.pendingBase = true, m.hold(base)
	} else if err := m.putRecord(r, base, true); err != nil {
		// To the content log, one sync and no bbolt commit, as a
		// finalize's record goes (putFinalizing).
		return protocol.BeginResult{}, err
	}
	e := &entry{rec: *r, owner: owner}
	e.rec.published = &e.info
	e.publish()
	// Locked before it can be found, so that an abort by its id comes
	// after its watch and timers, and stops them.
	e.mu.Lock()
	m.mu.Lock()
	m.sessions[r.ID] = e
	adm.settleLocked(e)
	m.mu.Unlock()
	m.watch(e)
	m.resetTimers(e)
	e.mu.Unlock()
	m.cfg.Logger.Info("session begun", "session", r.ID, "target", r.Target, "operation", r.Operation,
		"continues", r.ContinuesSession)
	m.traceStage(r, trace.String("target", r.Target), trace.String("operation", string(r.Operation)), trace.String("continues", r.ContinuesSession))
	m.pruneFinished()
	return protocol.BeginResult{
		SessionID:    r.ID,
		Stage:        r.Stage,
		EndMarker:    r.Scanner.Marker,
		Instructions: Instructions(shownTarget, r.Operation, r.Scanner.Marker),
		TargetFile:   r.Target,
		Operation:    r.Operation,
		SHA256:       r.BaseSHA256,
	}, nil
}

func (m *Manager) put(r *record) error {
	return m.putWith(r, nil)
}

// putWith is put storing also, in the same commit, the keys and values of
// extra when it is not nil.
func (m *Manager) putWith(r *record, extra *store.Put) error {
	return m.putRecord(r, extra, false)
}

// putFinalizing is putWith for the record of a finalize about to write its
// file: the record and extra (the last piece of the backup) go to the
// content log in one batch and one sync, and their bbolt index rides a
// later commit (store.LogMeta), as an append's does; recovery indexes them
// from the log. The file's rename waits for that sync, not for a commit.
func (m *Manager) putFinalizing(r *record, extra *store.Put) error {
	return m.putRecord(r, extra, true)
}

func (m *Manager) putRecord(r *record, extra *store.Put, logged bool) error {
	meta, err := r.marshal()
	if err != nil {
		return ioError(r.ID, "encoding the session record", err)
	}
	var puts []store.Put
	if extra != nil {
		puts = append(puts, *extra)
	}
	if r.unjournaled && r.pendingBase != nil {
		puts = append(puts, r.pendingBase.put)
	}
	if r.inline != nil {
		// A session.write's first journaling: the session, its content
		// and what rides with it in one commit.
		err = m.cfg.Store.Append(r.ID, r.LastSeq, r.inline, meta, puts...)
	} else if logged {
		err = m.cfg.Store.LogMeta(r.ID, meta, puts...)
	} else {
		err = m.cfg.Store.PutMeta(r.ID, meta, puts...)
	}
	if err != nil {
		return ioError(r.ID, "journaling the session", err)
	}
	r.inline = nil
	r.unjournaled = false
	r.pendingBase.release()
	r.pendingBase = nil
	r.publish()
	return nil
}

// forgetPendingBase drops the base of a session finishing before it was
// ever journaled: no merge needs it any more, and its record must not name
// pieces the store never held.
func (r *record) forgetPendingBase() {
	if r.unjournaled && r.pendingBase != nil && r.BaseKey == baseKey(r.ID) {
		r.BaseKey, r.BasePieces = "", 0
	}
	r.pendingBase.release()
	r.pendingBase = nil
}

// heldBaseMax bounds the bytes of targets' content at begin that sessions
// not journaled yet hold in memory: past it, a begin journals its session
// and base at once, as a session other records name does. Each is up to
// mergeMaxBytes, and a client could begin many sessions and append to
// none.
const heldBaseMax = 32 << 20

// heldBase is the target's content at begin, kept in memory for a merge
// until its session's first journaling stores it (record.pendingBase).
// Copies of the record share it; it is counted out of Manager.heldBases
// once.
type heldBase struct {
	put      store.Put
	size     int64
	held     *atomic.Int64
	released atomic.Bool
}

func putSize(p *store.Put) int64 {
	var n int64
	for _, kv := range p.KVs {
		n += int64(len(kv.Value))
	}
	return n
}

// canHold says whether base (nil: none) fits under heldBaseMax.
func (m *Manager) canHold(base *store.Put) bool {
	return base == nil || m.heldBases.Load()+putSize(base) <= heldBaseMax
}

func (m *Manager) hold(base *store.Put) *heldBase {
	if base == nil {
		return nil
	}
	h := &heldBase{put: *base, size: putSize(base), held: &m.heldBases}
	m.heldBases.Add(h.size)
	return h
}

// release counts h out once it is journaled or no longer wanted.
func (h *heldBase) release() {
	if h != nil && h.released.CompareAndSwap(false, true) {
		h.held.Add(-h.size)
	}
}

// putFinished journals a record that reached its last stage and drops its
// chunks, in one commit: its content is on disk, or no longer wanted.
func (m *Manager) putFinished(r *record) error {
	r.forgetPendingBase()
	meta, err := r.marshal()
	if err != nil {
		return ioError(r.ID, "encoding the session record", err)
	}
	if err := m.cfg.Store.Finish(r.ID, meta); err != nil {
		return ioError(r.ID, "journaling the session", err)
	}
	r.unjournaled = false
	r.publish()
	return nil
}

// putFinishedLater is putFinished riding the next commit (see
// completeWritten): the record is published at once. Should that commit
// fail, the session is journaled again, by itself, as it then stands: a
// completion left unjournaled would be recovered only at the next start,
// and by then the target may have changed.
//
// meta, when not nil, is the record as marshal encodes it now, encoded
// by the caller while it waited for something else.
func (m *Manager) putFinishedLater(e *entry, meta []byte) error {
	r := &e.rec
	r.forgetPendingBase()
	if meta == nil {
		var err error
		if meta, err = r.marshal(); err != nil {
			return ioError(r.ID, "encoding the session record", err)
		}
	}
	id := r.ID
	// Journaled by the commit it rides, or again by itself should that
	// fail (journalFinishedAgain).
	r.unjournaled = false
	m.cfg.Store.FinishLater(id, meta, func(err error) {
		if err == nil {
			return
		}
		m.cfg.Logger.Error("journaling a completed session; trying again", "session", id, "err", err)
		// Not on the committer's goroutine, which calls this.
		go m.journalFinishedAgain(e, id)
	})
	r.publish()
	return nil
}

// journalFinishedAgain journals a finished session whose deferred record
// failed to commit.
func (m *Manager) journalFinishedAgain(e *entry, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rec.ID != id || e.rec.Stage.Open() {
		return
	}
	if err := m.putFinished(&e.rec); err != nil {
		m.cfg.Logger.Error("journaling a completed session", "session", id, "err", err)
	}
}

// publish makes the record's current state what listings show.
func (r *record) publish() {
	if r.published != nil {
		info := r.info()
		r.published.Store(&info)
	}
}

func (e *entry) publish() { e.rec.publish() }

// snapshot is the entry as last published.
func (e *entry) snapshot() protocol.SessionInfo {
	if p := e.info.Load(); p != nil {
		return *p
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec.info()
}

// Append journals one chunk. It returns only after the chunk (and, when
// recordDue says so, the session's updated record) is durable; a repeated
// seq with the same bytes is acknowledged again without storing anything.
func (m *Manager) Append(p protocol.AppendParams) (protocol.AppendResult, error) {
	return m.AppendOrdered(p, nil)
}

// An Orderer is told when an append's place among its session's chunks is
// fixed (AppendOrdered). Ordered must not block, least of all on another
// append: the chunk is queued by then, and the log writes nothing more
// until its append goes on to wait for it.
type Orderer interface{ Ordered() }

// AppendOrdered is Append that calls ordered.Ordered (if ordered is not
// nil) once the chunk's place among its session's chunks is fixed: it is
// queued for the journal after the chunks before it, or refused. From then
// on the session's next chunk may be appended, and it joins this one's sync
// when it comes before that starts. The reply still waits for the chunk to
// be durable. Ordered is called once, on the caller's goroutine, before
// AppendOrdered returns.
func (m *Manager) AppendOrdered(p protocol.AppendParams, ordered Orderer) (protocol.AppendResult, error) {
	res, queued, err := m.queueAppend(p)
	if ordered != nil {
		ordered.Ordered()
	}
	if err != nil || queued.journal == nil {
		return res, err
	}
	return queued.wait(m, res)
}

// queueAppend checks chunk p and puts it in the journal's queue, its
// session's record updated as though it were journaled (pipeline.go). It
// returns the reply the chunk gets once durable, with what to wait for; or
// the reply of a duplicate (a zero queuedAppend), or an error. The
// queuedAppend is a value: the caller's, on its stack.
func (m *Manager) queueAppend(p protocol.AppendParams) (protocol.AppendResult, queuedAppend, error) {
	if p.Seq == 0 {
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonSeqZero, "seq starts at 1 for a session's first chunk")
		e.Data.Field = "seq"
		return protocol.AppendResult{}, queuedAppend{}, e
	}
	if int64(len(p.Chunk)) > m.cfg.MaxChunkBytes {
		return protocol.AppendResult{}, queuedAppend{}, sizeLimit(protocol.ReasonChunkTooLarge, m.cfg.MaxChunkBytes,
			fmt.Sprintf("chunk of %d bytes", len(p.Chunk)))
	}
	e, err := m.lookup(p.SessionID)
	if err != nil {
		return protocol.AppendResult{}, queuedAppend{}, err
	}
	e.mu.lockAppend()
	defer e.mu.Unlock()
	r := &e.rec
	for p.Seq <= r.LastSeq && e.mu.inFlight(p.Seq) {
		// A retry of a chunk not yet durable: its answer is the
		// original's, known once that is journaled or failed (and
		// then the retry is taken as the chunk).
		e.mu.wait()
	}
	if p.Seq <= r.LastSeq && r.Stage != protocol.StageAborted && r.Stage != protocol.StageExpired {
		// A retry of an acknowledged chunk is answered even after the
		// session moved on, so a client that lost the ack is not confused.
		res, err := m.duplicate(r, p)
		if d := e.durableRecord(); err == nil && d != r {
			// Later chunks are in flight and may yet fail: the reply
			// tells the session as journaled, not their bytes or marker.
			res = appendResult(d, p.Seq)
			res.Duplicate = true
		}
		return res, queuedAppend{}, err
	}
	if !r.acceptsContent() {
		return protocol.AppendResult{}, queuedAppend{}, closed(r)
	}
	if p.Seq != r.LastSeq+1 {
		return protocol.AppendResult{}, queuedAppend{}, seqGap(r.ID, p.Seq, r.LastSeq+1)
	}
	if r.Scanner.Total+int64(len(p.Chunk)) > m.cfg.MaxSessionBytes {
		err := sizeLimit(protocol.ReasonSessionTooLarge, m.cfg.MaxSessionBytes,
			fmt.Sprintf("session %s with %d more bytes", r.ID, len(p.Chunk)))
		err.Data.SessionID = r.ID
		return protocol.AppendResult{}, queuedAppend{}, err
	}
	if err := m.roomFor(int64(len(p.Chunk))); err != nil {
		err.(*protocol.Error).Data.SessionID = r.ID
		return protocol.AppendResult{}, queuedAppend{}, err
	}
	// The chunk's bytes as they are, not a copy (a chunk is up to 1
	// MiB): the scanner only reads them, and the store writes them from
	// where they are before the append returns; nothing writes to them.
	chunk := unsafe.Slice(unsafe.StringData(p.Chunk), len(p.Chunk))
	next := *r
	next.Scanner.Feed(chunk)
	next.LastSeq = p.Seq
	next.Stage = protocol.StageStreaming
	next.UpdatedAt = m.cfg.Clock.Now()
	// The record goes with the chunk only when more than the counts the
	// chunks themselves give has changed, or when enough has been
	// appended since it last went: after a crash, catchUp rebuilds the
	// counts from the chunks appended after it.
	var (
		meta []byte
		puts []store.Put
		base *heldBase
	)
	if r.unjournaled {
		// The session's first journaling: its record and the base kept
		// at begin go with this chunk, in one batch and one sync.
		next.unjournaled, next.pendingBase = false, nil
		if r.pendingBase != nil {
			puts = append(puts, r.pendingBase.put)
			base = r.pendingBase
		}
	}
	if r.unjournaled || next.recordDue(r) {
		next.recordedSeq, next.recordedBytes = next.LastSeq, next.Scanner.Total
		// Encoded from a copy: encoding/json would move next itself to
		// the heap, a record's copy on every append instead of on these.
		encoded := next
		var err error
		if meta, err = encoded.marshal(); err != nil {
			return protocol.AppendResult{}, queuedAppend{}, ioError(r.ID, "encoding the session record", err)
		}
	}
	journal, err := m.cfg.Store.EnqueueAppend(r.ID, p.Seq, chunk, meta, e.mu.last(), puts...)
	if err != nil {
		return protocol.AppendResult{}, queuedAppend{}, ioError(r.ID, "journaling the chunk", err)
	}
	stream, backfill := m.streamFor(e, r, chunk)
	pending := r.sumChunk(chunk, next.Scanner, e.mu.hashing, stream != nil)
	next.sum = pending.sum
	e.mu.hashing = pending.job
	e.mu.nextID++
	q := &queuedAppend{e: e, id: e.mu.nextID, journal: journal, sum: pending, first: r.Stage != protocol.StageStreaming}
	if stream != nil {
		stream.writes.Add(1) // done by wait, which every queued chunk gets
		q.stream = &streamChunk{s: stream, chunk: chunk, at: r.Scanner.Total, backfill: backfill}
	}
	e.mu.flight = append(e.mu.flight, inflight{id: q.id, seq: p.Seq, rollback: *r, journal: journal, base: base})
	*r = next
	m.resetTimers(e)
	return appendResult(r, p.Seq), *q, nil
}

// queuedAppend is a chunk queueAppend put in the journal's queue.
type queuedAppend struct {
	e       *entry
	id      uint64
	journal *store.Appending
	sum     pendingSum
	// first: the chunk moved the session to streaming.
	first bool
	// stream, if not nil, is the chunk's write into its session's
	// streamed file.
	stream *streamChunk
}

// streamChunk is a chunk to write into a streamed file.
type streamChunk struct {
	s        *streamed
	chunk    []byte
	at       int64
	backfill bool
}

// wait waits for the chunk to be durable and returns res, its reply, or
// the error that failed it, the session taken back to before it.
func (q *queuedAppend) wait(m *Manager, res protocol.AppendResult) (protocol.AppendResult, error) {
	var written chan struct{}
	if q.stream != nil {
		// Beside the journal's write and sync of the chunk, from the
		// same bytes, which are the caller's again once this returns;
		// not before them, as this goroutine may be the one to lead
		// the journal's next batch.
		written = m.startStreamWrite(q.stream, res.SessionID)
	}
	err := q.journal.Wait()
	if written != nil {
		<-written
	}
	// The chunk's bytes are the caller's again once the hash is done
	// with them too.
	sum := q.sum.wait()
	e := q.e
	e.mu.mu.Lock()
	defer e.mu.mu.Unlock()
	stands := e.settle(q.id, err)
	if err != nil {
		if q.stream != nil {
			// Rolled back: the file holds a chunk the journal does not.
			q.stream.s.broken.Store(true)
		}
		return protocol.AppendResult{}, ioError(res.SessionID, "journaling the chunk", err)
	}
	if !stands {
		// Cannot be: a chunk after a failed one fails too.
		return protocol.AppendResult{}, ioError(res.SessionID, "journaling the chunk", errors.New("a chunk before it failed"))
	}
	if sum == nil && q.sum.sum != nil && e.rec.sum == q.sum.sum {
		// The sum could not follow the content from here on.
		e.rec.sum = nil
	}
	if q.first {
		m.traceStage(e.durableRecord())
	}
	return res, nil
}

func (m *Manager) duplicate(r *record, p protocol.AppendParams) (protocol.AppendResult, error) {
	stored, err := m.cfg.Store.Chunk(r.ID, p.Seq)
	if errors.Is(err, store.ErrNotFound) {
		// The chunks of a finished session are gone; its ack stands.
		res := appendResult(r, p.Seq)
		res.Duplicate = true
		return res, nil
	}
	if err != nil {
		return protocol.AppendResult{}, ioError(r.ID, "reading an acknowledged chunk", err)
	}
	if string(stored) != p.Chunk {
		return protocol.AppendResult{}, seqConflict(r.ID, p.Seq, r.LastSeq+1)
	}
	res := appendResult(r, p.Seq)
	res.Duplicate = true
	return res, nil
}

func appendResult(r *record, seq uint64) protocol.AppendResult {
	return protocol.AppendResult{
		SessionID:     r.ID,
		Seq:           seq,
		Stage:         r.Stage,
		Bytes:         r.contentBytes(),
		Lines:         r.contentLines(),
		EndMarkerSeen: r.Scanner.MarkerSeen(),
		TrailingBytes: r.Scanner.TrailingLen(),
	}
}

// Abort discards an open or truncated session and its journaled content.
func (m *Manager) Abort(id string) (protocol.AbortResult, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.AbortResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	if !r.Stage.Open() && r.Stage != protocol.StageTruncated && r.Stage != protocol.StageNeedsCorrections {
		return protocol.AbortResult{}, closed(r)
	}
	if err := m.abortLocked(e); err != nil {
		return protocol.AbortResult{}, err
	}
	return protocol.AbortResult{SessionID: r.ID, Stage: r.Stage}, nil
}

// abortLocked ends a session whose lock is held, dropping its content.
func (m *Manager) abortLocked(e *entry) error {
	r := &e.rec
	if r.Stage.Finished() || r.Stage == protocol.StageSuperseded {
		return nil
	}
	r.Stage = protocol.StageAborted
	r.UpdatedAt = m.cfg.Clock.Now()
	m.dropStream(e)
	base := m.releaseBase(r)
	if err := m.putFinished(r); err != nil {
		return err
	}
	base()
	m.stopTimers(e)
	m.unwatch(e)
	m.cfg.Logger.Info("session aborted", "session", r.ID)
	m.traceStage(r)
	return nil
}

// Get describes one session.
func (m *Manager) Get(id string) (protocol.SessionInfo, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	return e.snapshot(), nil
}

// List describes the unfinished sessions (open, truncated, needing
// corrections), or all of them, oldest first.
func (m *Manager) List(all bool) []protocol.SessionInfo {
	infos, _ := m.list(context.Background(), all)
	return infos
}

// listCheckEvery is how many sessions a listing looks at between two
// checks that its caller is still there.
const listCheckEvery = 256

// list is List that stops, with ctx's error, once ctx is done.
func (m *Manager) list(ctx context.Context, all bool) ([]protocol.SessionInfo, error) {
	m.mu.Lock()
	entries := m.entries()
	m.mu.Unlock()
	infos := make([]protocol.SessionInfo, 0, len(entries))
	for i, e := range entries {
		if i%listCheckEvery == 0 {
			if err := readOn(ctx, "session.list.scan"); err != nil {
				return nil, err
			}
		}
		if info := e.snapshot(); all || info.Stage.Unfinished() {
			infos = append(infos, info)
		}
	}
	sort.Slice(infos, func(i, j int) bool {
		if !infos[i].CreatedAt.Equal(infos[j].CreatedAt) {
			return infos[i].CreatedAt.Before(infos[j].CreatedAt)
		}
		return infos[i].SessionID < infos[j].SessionID
	})
	return infos, nil
}

// OpenCount is the number of sessions that still accept content or a
// finalize.
func (m *Manager) OpenCount() int {
	m.mu.Lock()
	entries := m.entries()
	m.mu.Unlock()
	n := 0
	for _, e := range entries {
		if e.snapshot().Stage.Open() {
			n++
		}
	}
	return n
}

// traceStage records that a session entered its current stage.
func (m *Manager) traceStage(r *record, attrs ...trace.Attr) {
	attrs = append(attrs, trace.String("stage", string(r.Stage)), trace.Int("bytes", r.contentBytes()), trace.Int("lines", r.contentLines()))
	m.cfg.Trace.Record(trace.Event{Time: m.cfg.Clock.Now(), Type: protocol.TraceStage, SessionID: r.ID, Attrs: attrs})
}
