package session

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// The store's cap (Config.StoreMaxBytes). What the store holds is, in
// order of what may go: undo backups of completed writes, which only
// session.undo reads; then acknowledged content of unfinished sessions and
// the records, which are never dropped. So when new data would take the
// store past the cap, the oldest backups go first, each one logged, traced
// (store.backup_dropped) and marked on its session so that undo says why
// it cannot restore; when no backup is left to drop, new content (appends,
// spool imports) is refused with store_full.

// DefaultStoreMaxBytes is oriond's default cap: four sessions of the
// largest size (DefaultMaxSessionBytes) or their backups. The store keeps
// backups a day (DefaultSummaryRetention) for undo: sixteen overwrites of a
// 64 MiB file fit, and the seventeenth drops the oldest.
const DefaultStoreMaxBytes = 1 << 30

// TraceBackupDropped is the trace event of a backup dropped for the cap.
const TraceBackupDropped = protocol.TraceBackupDropped

// storeCap counts what the cap dropped, for daemon.status.
type storeCap struct {
	dropped      atomic.Int64
	droppedBytes atomic.Int64
}

// StoreStats describes the store and what its cap dropped.
func (m *Manager) StoreStats() (protocol.StoreStats, error) {
	used, file, err := m.cfg.Store.Usage()
	if err != nil {
		return protocol.StoreStats{}, err
	}
	return protocol.StoreStats{Bytes: used, FileBytes: file,
		BackupsDropped: m.cap.dropped.Load(), BackupBytesDropped: m.cap.droppedBytes.Load()}, nil
}

// roomFor makes room for n more bytes under the cap by dropping the oldest
// backups. It reports store_full when, with every droppable backup gone,
// the n bytes still do not fit; a caller that must store them anyway (a
// backup, which is never what is acknowledged) ignores that.
func (m *Manager) roomFor(n int64) error {
	limit := m.cfg.StoreMaxBytes
	if limit <= 0 {
		return nil
	}
	used, err := m.cfg.Store.Used()
	if err != nil || used+n <= limit {
		return nil
	}
	for _, c := range m.backupCandidates() {
		m.dropForCap(c, limit)
		if used, err = m.cfg.Store.Used(); err != nil || used+n <= limit {
			return nil
		}
	}
	e := protocol.Errorf(protocol.CodeTooLarge, protocol.ReasonStoreFull,
		"the store holds %d bytes, and %d more would take it over its cap of %d bytes (--store-max-bytes) with no undo backup left to drop: finish or abort open sessions, or raise the cap",
		used, n, limit)
	e.Data.Limit = limit
	return e
}

// backupCandidate is a completed session holding backups.
type backupCandidate struct {
	e       *entry
	created time.Time
}

// backupCandidates are the sessions whose backups may be dropped, oldest
// first: completed, not already dropped.
func (m *Manager) backupCandidates() []backupCandidate {
	m.mu.Lock()
	entries := m.entries()
	m.mu.Unlock()
	var cs []backupCandidate
	for _, e := range entries {
		if e.snapshot().Stage != protocol.StageCompleted {
			continue
		}
		// A session being finalized or undone holds its lock: its backup
		// is in use, and it is the newest anyway.
		if !e.mu.TryLock() {
			continue
		}
		r := &e.rec
		if r.Stage == protocol.StageCompleted && r.BackupDropped == "" && r.backupBytes() > 0 {
			cs = append(cs, backupCandidate{e: e, created: r.CreatedAt})
		}
		e.mu.Unlock()
	}
	sort.Slice(cs, func(i, j int) bool {
		if !cs[i].created.Equal(cs[j].created) {
			return cs[i].created.Before(cs[j].created)
		}
		return cs[i].e.info.Load().SessionID < cs[j].e.info.Load().SessionID
	})
	return cs
}

// backupBytes is about what the record's backups take in the store.
func (r *record) backupBytes() int64 {
	n := r.BackupPieces + r.AfterPieces
	if r.BaseKey == baseKey(r.ID) {
		n += r.BasePieces
	}
	for _, c := range r.Changes {
		n += c.BackupPieces + c.AfterPieces
	}
	return int64(n) * backupPiece
}

// dropForCap drops one session's backups and says so.
func (m *Manager) dropForCap(c backupCandidate, limit int64) {
	e := c.e
	if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	r := &e.rec
	if r.Stage != protocol.StageCompleted || r.BackupDropped != "" {
		return
	}
	size := r.backupBytes()
	now := m.cfg.Clock.Now()
	r.BackupDropped = fmt.Sprintf("dropped at %s to keep the store under --store-max-bytes (%d bytes)",
		now.UTC().Format(time.RFC3339), limit)
	r.UpdatedAt = now
	// The record first: a crash between the two leaves pieces nobody
	// reads (forget deletes them), never a record promising an undo whose
	// pieces are gone.
	if err := m.put(r); err != nil {
		r.BackupDropped = ""
		m.cfg.Logger.Warn("marking a backup dropped", "session", r.ID, "err", err)
		return
	}
	m.dropBackup(r.ID, r.BackupPieces)
	m.dropMergeBackups(r)
	for _, ch := range r.Changes {
		m.dropBackup(ch.BackupID, ch.BackupPieces)
		m.dropBackup(afterKey(ch.BackupID), ch.AfterPieces)
	}
	m.cap.dropped.Add(1)
	m.cap.droppedBytes.Add(size)
	m.cfg.Logger.Warn("dropped the oldest undo backup to keep the store under its cap; session.undo of that session is no longer possible",
		"session", r.ID, "target", r.Target, "backup_bytes", size, "store_max_bytes", limit)
	m.cfg.Trace.Record(trace.Event{Time: now, Type: TraceBackupDropped, SessionID: r.ID,
		Fields: map[string]any{"target": r.Target, "bytes": size, "store_max_bytes": limit}})
}

// backupDropped is undo's answer for a session whose backup the cap dropped.
func backupDropped(r *record) *protocol.Error {
	pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonBackupDropped,
		"session %s's backup of %s was %s, so undo cannot restore what the write replaced",
		r.ID, r.Target, r.BackupDropped)
	pe.Data.SessionID = r.ID
	pe.Data.Path = r.Target
	return pe
}
