package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// A transaction changes several files all or none: the files of a
// tx.begin, or the files of a multi-file edit. Its record in txBucket is
// the authority after a crash. The commit runs in this order:
//
//  1. the current content of every file is backed up in the store, and
//     checked to be what the changes were computed against;
//  2. every new content is staged in a fsynced temp file next to its target;
//  3. the record says "committing", with each file's old and new hash;
//  4. the temp files are renamed over their targets (deletions removed);
//  5. the record says "committed", with each session's summary.
//
// A failure in 1-3 leaves every file untouched. A failure in 4, or a crash
// anywhere before 5 is durable, is rolled back: each file that holds its new
// content gets its old content back from the backup (or is removed, if the
// transaction created it). A restart completes that roll-back before the
// socket opens. After 5 the transaction stands; a restart only finishes
// recording its sessions as completed.
const txBucket = "txs"

// changeKind is what a transaction does to one file.
type changeKind string

const (
	// changeWrite replaces the file, or creates it if absent.
	changeWrite changeKind = "write"
	// changeCreate creates the file and fails if it appeared meanwhile.
	changeCreate changeKind = "create"
	// changeDelete removes the file.
	changeDelete changeKind = "delete"
)

// fileChange is one file of a transaction.
type fileChange struct {
	Path string     `json:"path"`
	Kind changeKind `json:"kind"`
	// SessionID is the session the change belongs to; BackupID keys the
	// old content in the backups bucket.
	SessionID    string `json:"session_id"`
	BackupID     string `json:"backup_id"`
	BackupPieces uint64 `json:"backup_pieces,omitempty"`
	// OldExists and OldSHA256 are the file as the change was computed
	// against; OldPerm is restored with the content on roll-back.
	OldExists bool   `json:"old_exists"`
	OldSHA256 string `json:"old_sha256,omitempty"`
	OldPerm   uint32 `json:"old_perm,omitempty"`
	// NewSHA256 and NewBytes are the staged content.
	NewSHA256 string `json:"new_sha256,omitempty"`
	NewBytes  int64  `json:"new_bytes,omitempty"`
	NewMode   uint32 `json:"new_mode,omitempty"`
	// CreatedDirs are the directories made for the file, removed again
	// (when empty) by a roll-back or an undo.
	CreatedDirs []string `json:"created_dirs,omitempty"`
	// Workspace confines the write, as its session's workspace does
	// (record.Workspace): the directory is opened through it.
	Workspace string `json:"workspace,omitempty"`
	// AfterPieces are the backup, under afterKey(BackupID), of what a
	// multi-file edit wrote over an existing file, the base of a
	// three-way undo (see merge.go).
	AfterPieces uint64 `json:"after_pieces,omitempty"`
	// MovedFrom is set on the file a multi-file edit moved here: the
	// path it came from, which is that edit's delete of the same file.
	// Its undo moves it back, with the edits made to it since.
	MovedFrom string `json:"moved_from,omitempty"`

	// fill writes the new content into the staged temp file; content is
	// that content, when it is in memory.
	fill    func(io.Writer) error
	content []byte
}

// isOld and isNew tell whether the file, as it is now, holds the
// change's old or new content.
func (c *fileChange) isOld(now targetState) bool {
	return now.exists == c.OldExists && (!now.exists || now.sha256 == c.OldSHA256)
}

func (c *fileChange) isNew(now targetState) bool {
	if c.Kind == changeDelete {
		return !now.exists
	}
	return now.exists && now.sha256 == c.NewSHA256
}

// txRecord is a transaction as journaled in txBucket.
type txRecord struct {
	ID     string           `json:"id"`
	Intent string           `json:"intent,omitempty"`
	Stage  protocol.TxStage `json:"stage"`
	// Sessions are the member sessions of a tx.begin, or the one session
	// of a multi-file edit.
	Sessions []string `json:"sessions"`
	// Edit is set for the transaction of a multi-file edit session, which
	// exists only while and after that session commits.
	Edit bool `json:"edit,omitempty"`
	// Undoes names the transaction this one undoes (see undoTx); its
	// Sessions are that transaction's sessions it puts back. Once
	// committed, those sessions are undone; its record matters only until
	// they are journaled so.
	Undoes string `json:"undoes,omitempty"`
	// RollForward marks the undo of one file, which keeps no backup: a
	// crash after its record says committing is finished forward at the
	// next start where the file holds the new content (see
	// applySingleUndo), and is otherwise not begun.
	RollForward bool         `json:"roll_forward,omitempty"`
	Files       []fileChange `json:"files,omitempty"`
	// Results are the summaries of the sessions, in Sessions order, once
	// committed.
	Results   []protocol.FinalizeResult `json:"results,omitempty"`
	Error     string                    `json:"error,omitempty"`
	CreatedAt time.Time                 `json:"created_at"`
	UpdatedAt time.Time                 `json:"updated_at"`
}

func (m *Manager) putTx(tx *txRecord, extra ...store.Put) error {
	tx.UpdatedAt = m.cfg.Clock.Now()
	files := make([]string, len(tx.Files))
	for i, c := range tx.Files {
		files[i] = string(c.Kind) + " " + c.Path
	}
	for _, id := range tx.Sessions {
		// One event per session, so a session's trace shows its transaction.
		m.cfg.Trace.Record(trace.Event{Time: tx.UpdatedAt, Type: protocol.TraceTxStage, SessionID: id, Fields: map[string]any{
			"tx_id": tx.ID, "stage": tx.Stage, "files": files, "error": tx.Error}})
	}
	b, err := json.Marshal(tx)
	if err != nil {
		return ioError("", "encoding the transaction record", err)
	}
	puts := append([]store.Put{{Bucket: txBucket, KVs: []store.KV{{Key: []byte(tx.ID), Value: b}}}}, extra...)
	if err := m.cfg.Store.PutKVs(puts...); err != nil {
		return ioError("", "journaling the transaction", err)
	}
	return nil
}

// loadTxs reads every journaled transaction.
func (m *Manager) loadTxs() ([]txRecord, error) {
	var txs []txRecord
	err := m.cfg.Store.ScanKV(txBucket, nil, func(k, v []byte) (bool, error) {
		var tx txRecord
		if err := json.Unmarshal(v, &tx); err != nil {
			m.cfg.Logger.Error("skipping unreadable transaction record", "tx", string(k), "err", err)
			return true, nil
		}
		txs = append(txs, tx)
		return true, nil
	})
	return txs, err
}

// applyChanges commits changes as one transaction: steps 1-5 above, less
// the "committed" record, which the caller writes with the summaries. On
// error every file is as it was and the record says why.
func (m *Manager) applyChanges(tx *txRecord, changes []fileChange) error {
	backedUp := 0
	dropBackups := func() {
		for _, c := range changes[:backedUp] {
			m.dropBackup(c.BackupID, c.BackupPieces)
		}
	}
	for i := range changes {
		c := &changes[i]
		if !c.OldExists {
			if now, err := m.statTarget(m.fs(), c.Path); err != nil || now.exists {
				dropBackups()
				return txChanged(tx, c.Path, "it was created by someone else")
			}
			backedUp++
			continue
		}
		b, err := m.backupFile(c.BackupID, c.Path)
		c.BackupPieces = b.pieces
		backedUp++
		if err != nil {
			dropBackups()
			pe := protocol.Errorf(protocol.CodeIO, protocol.ReasonBackupFailed,
				"keeping a backup of %s before replacing it failed, so nothing was written: %v", c.Path, err)
			pe.Data.TxID, pe.Data.Path = tx.ID, c.Path
			return pe
		}
		if !b.exists || b.sha256 != c.OldSHA256 {
			dropBackups()
			return txChanged(tx, c.Path, "it changed while the transaction was checked")
		}
		c.OldPerm = uint32(b.perm)
	}

	// The record names every file before any temp file exists, so that a
	// crash while staging leaves temp files the next start can find.
	tx.Files, tx.Stage, tx.Error = changes, txPreparing, ""
	if err := m.putTx(tx); err != nil {
		dropBackups()
		return err
	}
	// Each file's directory stays open from staging to its rename, so the
	// temp file and the target are named in the same directory.
	staged := make([]*atomicfile.Staged, len(changes))
	dirs := make([]*confine.Dir, len(changes))
	names := make([]string, len(changes))
	defer func() {
		for _, d := range dirs {
			if d != nil {
				d.Close()
			}
		}
	}()
	discard := func() {
		for _, s := range staged {
			if s != nil {
				s.Discard()
			}
		}
	}
	removeMade := func() {
		for i := len(changes) - 1; i >= 0; i-- {
			m.fs().RemoveEmptyDirs(changes[i].CreatedDirs)
			changes[i].CreatedDirs = nil
		}
	}
	for i := range changes {
		var d *confine.Dir
		var name string
		var err error
		if changes[i].Kind == changeDelete {
			d, name, err = m.fs().Within(changes[i].Workspace).OpenParent(changes[i].Path)
		} else {
			d, name, changes[i].CreatedDirs, err = m.openParentMaking(m.fs(), changes[i].Workspace, changes[i].Path)
		}
		if err != nil {
			removeMade()
			dropBackups()
			m.unprepare(tx)
			if pe := confinedError("", "opening the directory of "+changes[i].Path, err); pe.Data.Reason != protocol.ReasonIO {
				pe.Data.TxID, pe.Data.Path = tx.ID, changes[i].Path
				return pe
			}
			return txIOError(tx, "opening the directory of "+changes[i].Path, err)
		}
		dirs[i], names[i] = d, name
	}
	if slices.ContainsFunc(changes, func(c fileChange) bool { return len(c.CreatedDirs) > 0 }) {
		// The record names the directories made, so that a crash before
		// the commit record leaves none of them behind (unprepare).
		if err := m.putTx(tx); err != nil {
			removeMade()
			dropBackups()
			m.unprepare(tx)
			return err
		}
		failpoint.Hit("tx.dirsmade")
	}
	for i := range changes {
		c := &changes[i]
		if c.Kind == changeDelete {
			continue
		}
		mode := atomicfile.Replace
		if c.Kind == changeCreate {
			mode = atomicfile.CreateNew
		}
		s, err := atomicfile.Stage(dirs[i], names[i], atomicfile.Options{Mode: mode, Perm: 0o644, Tag: tx.ID}, c.fill)
		if err != nil {
			discard()
			removeMade()
			dropBackups()
			m.unprepare(tx)
			if errors.Is(err, atomicfile.ErrExists) {
				return targetExists(c.Path)
			}
			return txIOError(tx, "staging "+c.Path, err)
		}
		staged[i] = s
		res := s.Result()
		c.NewSHA256, c.NewBytes, c.NewMode = res.SHA256, res.Bytes, uint32(res.Mode)
	}

	tx.Files, tx.Stage = changes, protocol.TxCommitting
	if err := m.putTx(tx); err != nil {
		discard()
		removeMade()
		dropBackups()
		m.unprepare(tx)
		return err
	}
	failpoint.Hit("tx.committing")
	for i := range changes {
		c := &changes[i]
		var err error
		if c.Kind == changeDelete {
			if err = dirs[i].CheckWritable(names[i]); err == nil {
				err = atomicfile.Remove(dirs[i], names[i])
			}
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		} else if _, err = staged[i].Commit(); errors.Is(err, atomicfile.ErrNotDurable) {
			// The rename happened; the directory sync failing makes it no
			// less done, and the roll-back would meet the same disk.
			m.cfg.Logger.Warn("transaction file not yet durable", "tx", tx.ID, "path", c.Path, "err", err)
			err = nil
		}
		if err != nil {
			discard()
			m.rollBack(tx, fmt.Sprintf("writing %s failed: %v", c.Path, err))
			if errors.Is(err, atomicfile.ErrExists) {
				return targetExists(c.Path)
			}
			pe := txIOError(tx, "writing "+c.Path, err)
			pe.Code, pe.Data.Reason = protocol.CodeTxFailed, protocol.ReasonTxRolledBack
			pe.Message += "; every file of the transaction was put back as it was"
			return pe
		}
		failpoint.Hit("tx.renamed")
		if testHookRenamed != nil {
			if err := testHookRenamed(i); err != nil {
				discard()
				m.rollBack(tx, err.Error())
				return txIOError(tx, "after writing "+c.Path, err)
			}
		}
	}
	return nil
}

// testHookRenamed, set by tests, runs after each file of a commit is in
// place; an error fails the commit there, as a failing rename would.
var testHookRenamed func(i int) error

// txPreparing is the stage of a transaction whose new contents are being
// staged: no target has changed yet. It never leaves the daemon.
const txPreparing protocol.TxStage = "preparing"

// unprepare returns a transaction whose staging failed (or was cut short by
// a crash) to where it was: its temp files and the directories it made
// removed, its files untouched, and committable again.
func (m *Manager) unprepare(tx *txRecord) {
	m.cleanTxTemps(tx)
	for i := len(tx.Files) - 1; i >= 0; i-- {
		m.fs().RemoveEmptyDirs(tx.Files[i].CreatedDirs)
		tx.Files[i].CreatedDirs = nil
	}
	tx.Stage = protocol.TxOpen
	if err := m.putTx(tx); err != nil {
		m.cfg.Logger.Error("recording an unprepared transaction", "tx", tx.ID, "err", err)
	}
}

// cleanTxTemps removes the temp files a transaction staged.
func (m *Manager) cleanTxTemps(tx *txRecord) {
	dirs := map[string]string{}
	for _, c := range tx.Files {
		dirs[filepath.Dir(c.Path)] = c.Path
	}
	for _, path := range dirs {
		if _, err := m.cleanTemp(path, tx.ID); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.cfg.Logger.Warn("cleaning temp files of a transaction", "tx", tx.ID, "err", err)
		}
	}
}

// rollBack puts every file of a committing transaction back as it was,
// and records the transaction as rolled back. A file that holds neither
// its old nor its new content was changed by someone else since; it is
// left alone and logged, since restoring it would lose that change.
func (m *Manager) rollBack(tx *txRecord, why string) {
	restored := make([]bool, len(tx.Files))
	for i := len(tx.Files) - 1; i >= 0; i-- {
		c := &tx.Files[i]
		now, err := m.statTarget(m.fs(), c.Path)
		switch {
		case err != nil:
			m.cfg.Logger.Error("reading a file to roll back", "tx", tx.ID, "path", c.Path, "err", err)
		case c.isOld(now):
			restored[i] = true
		case !c.isNew(now):
			m.cfg.Logger.Warn("not rolling back a file someone else changed", "tx", tx.ID, "path", c.Path)
		case !c.OldExists:
			err := m.removeFile(c.Path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				m.cfg.Logger.Error("removing a file the rolled-back transaction created", "tx", tx.ID, "path", c.Path, "err", err)
			}
			restored[i] = err == nil
		default:
			_, _, err := m.writeFile(m.fs(), "", c.Path, atomicfile.Options{Perm: fs.FileMode(c.OldPerm), Tag: tx.ID},
				m.backupFill(c.BackupID, c.BackupPieces))
			if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
				m.cfg.Logger.Error("restoring a file of a rolled-back transaction", "tx", tx.ID, "path", c.Path, "err", err)
			}
			restored[i] = err == nil
		}
	}
	m.cleanTxTemps(tx)
	for i := len(tx.Files) - 1; i >= 0; i-- {
		if restored[i] {
			m.fs().RemoveEmptyDirs(tx.Files[i].CreatedDirs)
		}
	}
	tx.Stage, tx.Error = protocol.TxRolledBack, why
	if err := m.putTx(tx); err != nil {
		m.cfg.Logger.Error("recording a rolled-back transaction", "tx", tx.ID, "err", err)
		return
	}
	// A backup is kept only where the old content is not back in place;
	// a new commit backs the files up again.
	for i, c := range tx.Files {
		if restored[i] && c.BackupPieces > 0 {
			m.dropBackup(c.BackupID, c.BackupPieces)
			tx.Files[i].BackupPieces = 0
		}
	}
	m.cfg.Logger.Info("transaction rolled back", "tx", tx.ID, "why", why)
}

// settleTx records a transaction as committed with its summaries, then
// completes its sessions.
// extra rides the same commit.
func (m *Manager) settleTx(tx *txRecord, results []protocol.FinalizeResult, extra ...store.Put) error {
	tx.Stage, tx.Results = protocol.TxCommitted, results
	if err := m.putTx(tx, extra...); err != nil {
		m.rollBack(tx, "recording the commit failed")
		return err
	}
	failpoint.Hit("tx.committed")
	return nil
}

// recoverTxs finishes what a crash interrupted: a committing transaction is
// rolled back; the sessions of a committed one are recorded as completed.
func (m *Manager) recoverTxs() error {
	txs, err := m.loadTxs()
	if err != nil {
		return err
	}
	for i := range txs {
		tx := &txs[i]
		switch tx.Stage {
		case txPreparing:
			m.cfg.Logger.Info("removing what a crash left of a transaction being staged", "tx", tx.ID)
			m.unprepare(tx)
		case protocol.TxCommitting:
			if tx.RollForward {
				m.rollForward(tx)
				break
			}
			m.cfg.Logger.Info("rolling back a transaction a crash interrupted", "tx", tx.ID, "files", len(tx.Files))
			m.rollBack(tx, "the daemon stopped while the transaction was being committed")
		case protocol.TxCommitted:
			if tx.Undoes != "" {
				m.cfg.Logger.Info("recording the sessions of an undone transaction as undone", "tx", tx.Undoes)
				m.markUndone(tx)
				break
			}
			for j, id := range tx.Sessions {
				e, err := m.lookup(id)
				if err != nil || j >= len(tx.Results) {
					continue
				}
				e.mu.Lock()
				if tx.Edit {
					e.rec.Changes = tx.Files
				}
				if e.rec.Stage != protocol.StageCompleted {
					m.cfg.Logger.Info("completing a session of a committed transaction", "tx", tx.ID, "session", id)
					m.complete(e, tx.Results[j])
				}
				e.mu.Unlock()
			}
		}
		if tx.Edit || tx.Undoes != "" {
			// The record of a multi-file edit or of an undo matters only
			// while it commits.
			m.dropTx(tx.ID)
			continue
		}
		m.txs[tx.ID] = &txEntry{rec: *tx}
	}
	return nil
}

func (m *Manager) dropTx(id string) {
	if err := m.cfg.Store.DeleteKV(txBucket, [][]byte{[]byte(id)}); err != nil {
		m.cfg.Logger.Warn("dropping a transaction record", "tx", id, "err", err)
	}
}

// lockAll locks entries in id order, so two transactions sharing
// sessions cannot deadlock; the returned func unlocks them.
func lockAll(es []*entry) func() {
	sorted := append([]*entry(nil), es...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].rec.ID < sorted[j].rec.ID })
	for _, e := range sorted {
		e.mu.Lock()
	}
	return func() {
		for _, e := range sorted {
			e.mu.Unlock()
		}
	}
}

func txChanged(tx *txRecord, path, how string) error {
	pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
		"%s changed on disk (%s); nothing of the transaction was written. Re-read it and try again", path, how)
	pe.Data.TxID, pe.Data.Path = tx.ID, path
	return pe
}

func txIOError(tx *txRecord, what string, err error) *protocol.Error {
	pe := protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "%s: %v", what, err)
	pe.Data.TxID = tx.ID
	return pe
}
