package session

import (
	"errors"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/orion-agent/orion/protocol"
)

// spoolNamespace makes the session id of an imported spool entry a
// function of the entry, so an import the daemon crashed in the middle of
// is recognised instead of duplicated.
var spoolNamespace = uuid.MustParse("6f1d2f5e-93a4-4c55-9d0a-5b8a1f0c2e77")

// ImportedID is the session id an imported spool entry gets.
func ImportedID(entryID string, createdAt time.Time) string {
	return uuid.NewSHA1(spoolNamespace, []byte(entryID+"\x00"+createdAt.UTC().Format(time.RFC3339Nano))).String()
}

// Import turns content a client left in the recovery spool into a session,
// as if the client had begun it and streamed the content. The session then
// follows the usual rules: written once its marker is there and it is
// finalized; without one, truncated and kept at the auto-finalize timeout.
// It returns the session id; importing the same entry twice is a no-op.
// An import that fails leaves nothing in the store: a refused entry stays
// in the spool, where it was, and a retry starts over.
func (m *Manager) Import(id string, p protocol.BeginParams, createdAt time.Time, content io.Reader) (string, error) {
	if e, err := m.lookup(id); err == nil {
		e.mu.Lock()
		done := e.rec.Imported
		e.mu.Unlock()
		if done {
			return id, nil
		}
		// A crash cut this import short: start it over.
		if err := m.forget(id); err != nil {
			return "", err
		}
	}
	begun, err := m.begin(p, func() string { return id }, createdAt, "")
	if err != nil {
		return "", err
	}
	var seq uint64
	err = protocol.SplitChunks(content, int(min(m.cfg.MaxChunkBytes, 256<<10)), func(chunk []byte) error {
		seq++
		_, err := m.Append(protocol.AppendParams{SessionID: id, Seq: seq, Chunk: string(chunk)})
		return err
	})
	var pe *protocol.Error
	if err != nil && !errors.As(err, &pe) {
		err = ioError(id, "reading spooled content", err)
	}
	if err != nil {
		if ferr := m.forget(begun.SessionID); ferr != nil {
			m.cfg.Logger.Warn("dropping a refused import", "session", begun.SessionID, "err", ferr)
		}
		return "", err
	}
	e, err := m.lookup(id)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rec.Imported = true
	return id, m.put(&e.rec)
}

// forget drops a session entirely, record and chunks.
func (m *Manager) forget(id string) error {
	e, err := m.lookup(id)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m.stopTimers(e)
	m.unwatch(e)
	m.dropBackup(id, e.rec.BackupPieces)
	m.dropMergeBackups(&e.rec)
	for _, c := range e.rec.Changes {
		m.dropBackup(c.BackupID, c.BackupPieces)
		m.dropBackup(afterKey(c.BackupID), c.AfterPieces)
	}
	if err := m.cfg.Store.Delete(id); err != nil {
		return ioError(id, "dropping a session", err)
	}
	e.rec.pendingBase.release()
	m.mu.Lock()
	delete(m.sessions, id)
	delete(m.caps.live, e)
	m.mu.Unlock()
	return nil
}
