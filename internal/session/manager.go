// Package session is oriond's engine: the write-session state machine, the
// end-marker scanner, and the journal-backed append and finalize paths. It
// knows nothing about sockets or JSON-RPC; the daemon decodes requests and
// calls it.
package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// Defaults for Config's limits.
const (
	DefaultMaxChunkBytes   = 1 << 20
	DefaultMaxSessionBytes = 256 << 20
)

// trailingPreviewBytes bounds the text after the marker echoed back to the
// client, so a chatty model cannot make a summary large.
const trailingPreviewBytes = 200

// Config holds the Manager's collaborators and limits.
type Config struct {
	Store           *store.Store
	Guard           *pathguard.Guard
	MaxChunkBytes   int64
	MaxSessionBytes int64
	Logger          *slog.Logger
	// Now and NewID are injected so tests control time and ids.
	Now   func() time.Time
	NewID func() string
}

// Manager owns every session. Calls on different sessions run concurrently
// (their journal appends share group commits); calls on one session are
// serialized by that session's lock.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*entry
}

type entry struct {
	mu  sync.Mutex
	rec record
}

// New loads every journaled session from the store.
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	m := &Manager{cfg: cfg, sessions: make(map[string]*entry)}
	err := cfg.Store.ForEachMeta(func(id string, meta []byte) error {
		var r record
		if err := json.Unmarshal(meta, &r); err != nil {
			// One unreadable record must not keep the daemon from serving
			// every other session; it stays in the store for inspection.
			cfg.Logger.Error("skipping unreadable session record", "session", id, "err", err)
			return nil
		}
		m.sessions[id] = &entry{rec: r}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading sessions: %w", err)
	}
	return m, nil
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
// result: what to write, how, and how to end.
func Instructions(target string, op protocol.Operation, marker string) string {
	what := "the complete content of " + target
	if op == protocol.OpAppend {
		what = "only the text to add to the end of " + target
	}
	return fmt.Sprintf("Now output %s as plain text: no JSON, no code fence around the whole file, "+
		"no explanation before or after it. When you are finished, write %s on a line of its own.", what, marker)
}

// Begin opens a session after checking the operation and the target.
func (m *Manager) Begin(p protocol.BeginParams) (protocol.BeginResult, error) {
	switch p.Operation {
	case protocol.OpCreate, protocol.OpOverwrite, protocol.OpAppend:
	case "":
		return protocol.BeginResult{}, missingField("operation")
	default:
		return protocol.BeginResult{}, unknownOperation(p.Operation)
	}
	if p.TargetFile == "" {
		return protocol.BeginResult{}, missingField("target_file")
	}
	target, err := m.cfg.Guard.Resolve(p.TargetFile, p.WorkspaceRoot)
	if err != nil {
		return protocol.BeginResult{}, pathError(err)
	}
	baseHash, exists, err := hashFile(target)
	if err != nil {
		return protocol.BeginResult{}, ioError("", "reading the current target", err)
	}
	if exists && p.Operation == protocol.OpCreate {
		return protocol.BeginResult{}, targetExists(target)
	}

	now := m.cfg.Now()
	id := m.cfg.NewID()
	r := record{
		ID:            id,
		Intent:        p.Intent,
		RequestedPath: p.TargetFile,
		WorkspaceRoot: p.WorkspaceRoot,
		Target:        target,
		Operation:     p.Operation,
		Stage:         protocol.StageAwaitingContent,
		Scanner:       NewScanner(EndMarker(id)),
		BaseExists:    exists,
		BaseSHA256:    baseHash,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if err := m.put(&r); err != nil {
		return protocol.BeginResult{}, err
	}
	m.mu.Lock()
	m.sessions[id] = &entry{rec: r}
	m.mu.Unlock()
	m.cfg.Logger.Info("session begun", "session", id, "target", target, "operation", p.Operation)
	return protocol.BeginResult{
		SessionID:    id,
		Stage:        r.Stage,
		EndMarker:    r.Scanner.Marker,
		Instructions: Instructions(p.TargetFile, p.Operation, r.Scanner.Marker),
		TargetFile:   target,
		Operation:    p.Operation,
	}, nil
}

func (m *Manager) put(r *record) error {
	meta, err := r.marshal()
	if err != nil {
		return ioError(r.ID, "encoding the session record", err)
	}
	if err := m.cfg.Store.PutMeta(r.ID, meta); err != nil {
		return ioError(r.ID, "journaling the session", err)
	}
	return nil
}

// Append journals one chunk. It returns only after the chunk and the
// session's updated record are durably committed; a repeated seq with the
// same bytes is acknowledged again without storing anything.
func (m *Manager) Append(p protocol.AppendParams) (protocol.AppendResult, error) {
	if p.Seq == 0 {
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonSeqZero, "seq starts at 1 for a session's first chunk")
		e.Data.Field = "seq"
		return protocol.AppendResult{}, e
	}
	if int64(len(p.Chunk)) > m.cfg.MaxChunkBytes {
		return protocol.AppendResult{}, sizeLimit(protocol.ReasonChunkTooLarge, m.cfg.MaxChunkBytes,
			fmt.Sprintf("chunk of %d bytes", len(p.Chunk)))
	}
	e, err := m.lookup(p.SessionID)
	if err != nil {
		return protocol.AppendResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	if r.Stage != protocol.StageAwaitingContent && r.Stage != protocol.StageStreaming {
		return protocol.AppendResult{}, closed(r)
	}
	if p.Seq <= r.LastSeq {
		stored, err := m.cfg.Store.Chunk(r.ID, p.Seq)
		if err != nil {
			return protocol.AppendResult{}, ioError(r.ID, "reading an acknowledged chunk", err)
		}
		if !bytes.Equal(stored, []byte(p.Chunk)) {
			return protocol.AppendResult{}, seqConflict(r.ID, p.Seq, r.LastSeq+1)
		}
		res := appendResult(r, p.Seq)
		res.Duplicate = true
		return res, nil
	}
	if p.Seq != r.LastSeq+1 {
		return protocol.AppendResult{}, seqGap(r.ID, p.Seq, r.LastSeq+1)
	}
	if r.Scanner.Total+int64(len(p.Chunk)) > m.cfg.MaxSessionBytes {
		err := sizeLimit(protocol.ReasonSessionTooLarge, m.cfg.MaxSessionBytes,
			fmt.Sprintf("session %s with %d more bytes", r.ID, len(p.Chunk)))
		err.Data.SessionID = r.ID
		return protocol.AppendResult{}, err
	}

	next := *r
	next.Scanner.Feed([]byte(p.Chunk))
	next.LastSeq = p.Seq
	next.Stage = protocol.StageStreaming
	next.UpdatedAt = m.cfg.Now()
	meta, err := next.marshal()
	if err != nil {
		return protocol.AppendResult{}, ioError(r.ID, "encoding the session record", err)
	}
	if err := m.cfg.Store.Append(r.ID, p.Seq, []byte(p.Chunk), meta); err != nil {
		return protocol.AppendResult{}, ioError(r.ID, "journaling the chunk", err)
	}
	*r = next
	return appendResult(r, p.Seq), nil
}

func appendResult(r *record, seq uint64) protocol.AppendResult {
	return protocol.AppendResult{
		SessionID:     r.ID,
		Seq:           seq,
		Stage:         r.Stage,
		Bytes:         r.Scanner.ContentLen(),
		Lines:         r.Scanner.Lines(),
		EndMarkerSeen: r.Scanner.MarkerSeen(),
		TrailingBytes: r.Scanner.TrailingLen(),
	}
}

// Finalize writes the session's content to its target atomically and
// returns a summary. The content is streamed from the journal into a temp
// file, never held whole in memory.
func (m *Manager) Finalize(p protocol.FinalizeParams) (protocol.FinalizeResult, error) {
	e, err := m.lookup(p.SessionID)
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	if !r.Stage.Open() {
		return protocol.FinalizeResult{}, closed(r)
	}
	if !r.Scanner.MarkerSeen() && !p.EndOfInput {
		return protocol.FinalizeResult{}, markerMissing(r)
	}
	// The path was checked at begin; check again, because a directory on
	// the way may have been swapped for a symlink since.
	target, err := m.cfg.Guard.Resolve(r.Target, "")
	if err != nil {
		return protocol.FinalizeResult{}, pathError(err)
	}
	if target != r.Target {
		e := protocol.Errorf(protocol.CodePathNotAllowed, protocol.ReasonSymlinkEscape,
			"%s now resolves to %s: a symlink changed since the session began; begin a new session", r.Target, target)
		e.Data.Path = r.Target
		return protocol.FinalizeResult{}, e
	}

	prev := r.Stage
	r.Stage = protocol.StageFinalizing
	r.UpdatedAt = m.cfg.Now()
	if err := m.put(r); err != nil {
		r.Stage = prev
		return protocol.FinalizeResult{}, err
	}
	res, err := m.write(r)
	if err != nil {
		// Nothing was written, and the content is still journaled: the
		// session stays finalizable.
		r.Stage = protocol.StageStreaming
		if perr := m.put(r); perr != nil {
			m.cfg.Logger.Error("recording a failed finalize", "session", r.ID, "err", perr)
		}
		return protocol.FinalizeResult{}, err
	}
	r.Stage = protocol.StageCompleted
	r.Result = &res
	r.UpdatedAt = m.cfg.Now()
	if err := m.put(r); err != nil {
		return protocol.FinalizeResult{}, err
	}
	// The summary is what a finished session keeps; its content is on disk.
	if err := m.cfg.Store.DeleteChunks(r.ID); err != nil {
		m.cfg.Logger.Warn("dropping chunks of a finished session", "session", r.ID, "err", err)
	}
	m.cfg.Logger.Info("session finalized", "session", r.ID, "target", r.Target,
		"bytes", res.Bytes, "lines", res.Lines, "sha256", res.SHA256)
	return res, nil
}

func (m *Manager) write(r *record) (protocol.FinalizeResult, error) {
	contentLen := r.Scanner.ContentLen()
	mode := atomicfile.Replace
	if r.Operation == protocol.OpCreate {
		mode = atomicfile.CreateNew
	}
	content := sha256.New()
	fill := func(w io.Writer) error {
		if r.Operation == protocol.OpAppend {
			if err := copyExisting(w, r.Target); err != nil {
				return err
			}
		}
		n, err := m.cfg.Store.CopyRange(r.ID, io.MultiWriter(w, content), 0, contentLen)
		if err != nil {
			return fmt.Errorf("streaming the journal: %w", err)
		}
		if n != contentLen {
			return fmt.Errorf("journal holds %d content bytes, expected %d", n, contentLen)
		}
		return nil
	}
	written, err := atomicfile.Write(r.Target, atomicfile.Options{Mode: mode, Perm: 0o644, Tag: r.ID}, fill)
	if errors.Is(err, atomicfile.ErrExists) {
		return protocol.FinalizeResult{}, targetExists(r.Target)
	}
	if err != nil {
		return protocol.FinalizeResult{}, ioError(r.ID, "writing "+r.Target, err)
	}
	res := protocol.FinalizeResult{
		SessionID:     r.ID,
		Stage:         protocol.StageCompleted,
		TargetFile:    r.Target,
		Operation:     r.Operation,
		Bytes:         contentLen,
		Lines:         r.Scanner.Lines(),
		SHA256:        hex.EncodeToString(content.Sum(nil)),
		FileBytes:     written.Bytes,
		FileSHA256:    written.SHA256,
		EndMarkerSeen: r.Scanner.MarkerSeen(),
		TrailingBytes: r.Scanner.TrailingLen(),
		Mode:          fmt.Sprintf("%#o", written.Mode.Perm()),
	}
	if res.TrailingBytes > 0 {
		var preview bytes.Buffer
		if _, err := m.cfg.Store.CopyRange(r.ID, &preview, r.Scanner.TrailStart, trailingPreviewBytes); err == nil {
			res.TrailingPreview = strings.ToValidUTF8(preview.String(), "")
		}
	}
	return res, nil
}

func copyExisting(w io.Writer, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// hashFile returns the sha256 of the file at path, and whether it exists.
func hashFile(path string) (string, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", true, err
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}

// Abort discards an open session and its journaled content.
func (m *Manager) Abort(id string) (protocol.AbortResult, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.AbortResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	if !r.Stage.Open() {
		return protocol.AbortResult{}, closed(r)
	}
	r.Stage = protocol.StageAborted
	r.UpdatedAt = m.cfg.Now()
	if err := m.put(r); err != nil {
		return protocol.AbortResult{}, err
	}
	if err := m.cfg.Store.DeleteChunks(r.ID); err != nil {
		m.cfg.Logger.Warn("dropping chunks of an aborted session", "session", r.ID, "err", err)
	}
	m.cfg.Logger.Info("session aborted", "session", r.ID)
	return protocol.AbortResult{SessionID: r.ID, Stage: r.Stage}, nil
}

// Get describes one session.
func (m *Manager) Get(id string) (protocol.SessionInfo, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec.info(), nil
}

// List describes the open sessions, or all of them, oldest first.
func (m *Manager) List(all bool) []protocol.SessionInfo {
	m.mu.Lock()
	entries := make([]*entry, 0, len(m.sessions))
	for _, e := range m.sessions {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	infos := make([]protocol.SessionInfo, 0, len(entries))
	for _, e := range entries {
		e.mu.Lock()
		if all || e.rec.Stage.Open() {
			infos = append(infos, e.rec.info())
		}
		e.mu.Unlock()
	}
	sort.Slice(infos, func(i, j int) bool {
		if !infos[i].CreatedAt.Equal(infos[j].CreatedAt) {
			return infos[i].CreatedAt.Before(infos[j].CreatedAt)
		}
		return infos[i].SessionID < infos[j].SessionID
	})
	return infos
}

// OpenCount is the number of sessions that are not yet finished.
func (m *Manager) OpenCount() int {
	n := 0
	for _, info := range m.List(false) {
		if info.Stage.Open() {
			n++
		}
	}
	return n
}
