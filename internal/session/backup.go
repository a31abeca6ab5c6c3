package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// backupBucket holds, per session, the content its finalize replaced, in
// pieces keyed <session id>/<8-byte piece number>, so session.undo can put
// it back. Pieces keep values small, as bbolt wants.
const (
	backupBucket = "backups"
	backupPiece  = 256 << 10
)

func backupKey(id string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(id), '/'), n)
}

// backup copies the current target into the store before it is replaced.
// The record's BackupPieces, written with the finalize, says how many pieces
// make the whole. Every piece but the last is durable when backup returns;
// the last (the only one, for a file up to 256 KiB) is returned to be
// stored in the commit that journals the finalize, which saves that
// finalize a commit: it is needed only once that record is.
func (m *Manager) backup(r *record) (pieces uint64, last *store.Put, err error) {
	if r.base != nil {
		if !r.BaseExists {
			return 0, nil, nil
		}
		return m.backupBytes(r.ID, r.base.data)
	}
	b, err := m.backupFileHoldingLast(m.fsOf(r), r.ID, r.Target)
	return b.pieces, b.last, err
}

// backupBytes is backup for a target whose content is at hand (see
// baseRead): the same pieces, cut from data without a copy.
func (m *Manager) backupBytes(id string, data []byte) (pieces uint64, last *store.Put, err error) {
	_ = m.roomFor(int64(len(data)))
	for {
		if last != nil {
			if err := m.cfg.Store.PutKVs(*last); err != nil {
				return pieces, last, err
			}
		}
		n := min(len(data), backupPiece)
		last = &store.Put{Bucket: backupBucket, KVs: []store.KV{{Key: backupKey(id, pieces), Value: data[:n:n]}}}
		pieces++
		if data = data[n:]; len(data) == 0 {
			return pieces, last, nil
		}
	}
}

// backedUp describes a file as backupFile copied it.
type backedUp struct {
	pieces uint64
	exists bool
	sha256 string
	perm   fs.FileMode
	// last is the last piece, not yet stored, when the caller asked to
	// store it itself.
	last *store.Put
}

// backupFile copies the file at path into the store under id, hashing what
// it copied, so a caller can tell whether that is the content it expects.
// A file that does not exist has no pieces.
func (m *Manager) backupFile(id, path string) (backedUp, error) {
	b, err := m.backupFileHoldingLast(m.fs(), id, path)
	if err == nil && b.last != nil {
		err = m.cfg.Store.PutKVs(*b.last)
		b.last = nil
	}
	return b, err
}

// backupFileHoldingLast is backupFile leaving the last piece to the caller,
// in b.last, to store with a commit of its own; it reads the file through
// fsys.
func (m *Manager) backupFileHoldingLast(fsys *confine.FS, id, path string) (backedUp, error) {
	var b backedUp
	f, err := m.openRegular(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return b, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return b, err
	}
	b.exists, b.perm = true, fi.Mode().Perm()
	// Older backups make room for this one; when none is left it is kept
	// anyway (the write it serves is acknowledged content), and is the
	// next to go once it is the oldest.
	_ = m.roomFor(fi.Size())
	h := sha256.New()
	buf := make([]byte, backupPiece)
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 || b.pieces == 0 && rerr != nil {
			// An empty file still gets one (empty) piece, so undo restores
			// an empty file, not nothing.
			h.Write(buf[:n])
			if b.last != nil {
				if err := m.cfg.Store.PutKVs(*b.last); err != nil {
					return b, err
				}
			}
			kv := store.KV{Key: backupKey(id, b.pieces), Value: append([]byte(nil), buf[:n]...)}
			b.last = &store.Put{Bucket: backupBucket, KVs: []store.KV{kv}}
			b.pieces++
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			b.sha256 = hex.EncodeToString(h.Sum(nil))
			return b, nil
		}
		if rerr != nil {
			return b, rerr
		}
	}
}

// backupFill writes a backup's pieces, in order, for atomicfile.Write.
func (m *Manager) backupFill(id string, pieces uint64) func(w io.Writer) error {
	return func(w io.Writer) error {
		for n := range pieces {
			// One key read, never a scan: a missing piece must read as
			// missing, not as whatever record sorts next.
			v, found, err := m.cfg.Store.GetKV(backupBucket, backupKey(id, n))
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("backup piece %d of %s is missing", n, id)
			}
			if _, err := w.Write(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// dropBackup deletes a session's backup pieces.
func (m *Manager) dropBackup(id string, pieces uint64) {
	keys := make([][]byte, 0, pieces)
	for n := range pieces {
		keys = append(keys, backupKey(id, n))
	}
	if len(keys) > 0 {
		if err := m.cfg.Store.DeleteKV(backupBucket, keys); err != nil {
			m.cfg.Logger.Warn("dropping a backup", "session", id, "err", err)
		}
	}
}

// Undo restores what a completed session replaced: the old content, or no
// file at all when the session created it. It refuses if the file changed
// since the session wrote it. A session of a transaction is undone with
// every other file of its transaction, all or none, as the transaction
// wrote them (see undoTx).
func (m *Manager) Undo(id string) (protocol.UndoResult, error) {
	res, err := m.undo(id)
	switch {
	case err != nil:
		m.logRefused("undo refused", "", err)
	case res.TxID == "": // a transaction's undo logs its own line
		m.cfg.Logger.Info("session undone", "session", res.SessionID, "target", res.TargetFile,
			"removed", res.Removed, "restored_bytes", res.RestoredBytes, "files", max(1, len(res.Files)))
	}
	return res, err
}

func (m *Manager) undo(id string) (protocol.UndoResult, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.UndoResult{}, err
	}
	e.mu.Lock()
	txID := e.rec.TxID // set at begin, never changed
	e.mu.Unlock()
	if txID != "" {
		if te, err := m.lookupTx(txID); err == nil {
			return m.undoTx(te, id)
		}
		// The transaction's record is gone (pruned): its sessions can
		// only be undone one by one.
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// The session's completion may still wait to ride a commit: it must be
	// durable before the file is put back, or a crash could leave a
	// finalizing record that recovery would take for a write to repeat.
	m.cfg.Store.Flush()
	r := &e.rec
	if r.BackupDropped != "" && !r.Undone {
		return protocol.UndoResult{}, backupDropped(r)
	}
	if r.Result != nil && r.Result.NothingWritten {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNothingToUndo,
			"session %s wrote nothing (its edit was already applied), so there is nothing to undo", id)
		pe.Data.SessionID = id
		return protocol.UndoResult{}, pe
	}
	if r.Stage != protocol.StageCompleted || r.Result == nil || r.Undone || r.Result.DryRun {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNothingToUndo,
			"session %s has no completed write to undo (stage %s, undone %v)", id, r.Stage, r.Undone)
		pe.Data.SessionID = id
		return protocol.UndoResult{}, pe
	}
	if len(r.Changes) > 0 {
		res, err := m.undoChanges(r)
		if err != nil {
			return res, err
		}
		r.Undone = true
		r.UpdatedAt = m.cfg.Clock.Now()
		if err := m.put(r); err != nil {
			return res, err
		}
		m.traceStage(r, trace.Bool("undone", true), trace.Int("files", int64(len(r.Changes))))
		return res, nil
	}
	now, err := m.statTarget(m.fs(), r.Target)
	if err != nil {
		return protocol.UndoResult{}, confinedError(id, "reading the target", err)
	}
	step, err := m.planUndo(r, now, id+"-undo")
	if err != nil {
		return protocol.UndoResult{}, err
	}
	res := protocol.UndoResult{SessionID: id, TargetFile: r.Target, Unchanged: step.change == nil}
	var utx *txRecord
	if step.change != nil {
		// The undo's own record: a crash before the file is written
		// leaves the undo not begun, after it, finished at the next start
		// (applySingleUndo).
		utx = &txRecord{ID: id + "-undo", Undoes: id, Sessions: []string{id}, Stage: protocol.TxOpen, CreatedAt: m.cfg.Clock.Now()}
		u, err := m.applySingleUndo(utx, *step.change)
		if err != nil {
			return protocol.UndoResult{}, err
		}
		if u.Kind == changeDelete {
			res.Removed = true
		} else {
			res.RestoredBytes, res.SHA256 = u.NewBytes, u.NewSHA256
		}
		if step.merged {
			res.Merged, res.MergedHunks = true, hunksOf(step.kept)
		}
	}
	if step.change == nil || step.change.Kind == changeDelete {
		res.RemovedDirs = m.fs().RemoveEmptyDirs(r.Result.CreatedDirs)
	}
	r.Undone = true
	r.UpdatedAt = m.cfg.Clock.Now()
	if err := m.put(r); err != nil {
		// The undo's record stays: the next start finds the file written
		// and records the session as undone.
		return protocol.UndoResult{}, err
	}
	if utx != nil {
		m.dropTx(utx.ID)
	}
	m.traceStage(r, trace.Bool("undone", true), trace.Bool("removed", res.Removed), trace.Int("restored_bytes", res.RestoredBytes), trace.Bool("unchanged", res.Unchanged))
	return res, nil
}

// applyUndo writes an undo's files as one transaction and records it
// committed; on error every file is as it was and the record is gone.
func (m *Manager) applyUndo(utx *txRecord, changes []fileChange) error {
	err := m.applyChanges(utx, changes)
	if err == nil {
		failpoint.Hit(failpointUndoApplied)
		err = m.settleTx(utx, nil)
	}
	if err != nil {
		m.dropTx(utx.ID)
	}
	return err
}

// undoTx undoes every file a committed transaction wrote, all or none, the
// way TxCommit wrote them: each file is checked to still hold what the
// transaction wrote, then the old contents are staged and renamed into place
// through applyChanges, so a failure or a crash puts back what the
// transaction had written. asked is the session the caller named; members
// undone on their own before are skipped.
func (m *Manager) undoTx(te *txEntry, asked string) (protocol.UndoResult, error) {
	te.mu.Lock()
	defer te.mu.Unlock()
	tx := &te.rec
	if tx.Stage != protocol.TxCommitted {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNothingToUndo,
			"transaction %s is %s: it wrote nothing to undo", tx.ID, tx.Stage)
		pe.Data.SessionID, pe.Data.TxID = asked, tx.ID
		return protocol.UndoResult{}, pe
	}
	entries := make([]*entry, len(tx.Sessions))
	for i, id := range tx.Sessions {
		var err error
		if entries[i], err = m.lookup(id); err != nil {
			return protocol.UndoResult{}, err
		}
	}
	unlock := lockAll(entries)
	defer unlock()
	// As in Undo: the completions may still wait to ride a commit.
	m.cfg.Store.Flush()

	var undo []fileChange
	var members []*record
	steps := map[string]undoStep{}
	for _, e := range entries {
		r := &e.rec
		if r.Undone || r.Stage != protocol.StageCompleted || r.Result == nil || r.Result.NothingWritten {
			continue
		}
		now, err := m.statTarget(m.fs(), r.Target)
		if err != nil {
			return protocol.UndoResult{}, confinedError(r.ID, "reading "+r.Target, err)
		}
		// The file as it is now is backed up under its own id, so that a
		// roll-back of the undo can put it back. A file changed since has
		// only this file's own change reverted, keeping the later one; a
		// file that cannot be undone that way refuses the whole undo.
		step, err := m.planUndo(r, now, r.ID+"-undo")
		if err != nil {
			if pe, ok := err.(*protocol.Error); ok {
				pe.Data.TxID = tx.ID
				pe.Message += fmt.Sprintf(" (nothing of transaction %s was undone)", tx.ID)
			}
			return protocol.UndoResult{}, err
		}
		if step.change != nil {
			undo = append(undo, *step.change)
		}
		steps[r.ID] = step
		members = append(members, r)
	}
	if len(members) == 0 {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNothingToUndo,
			"transaction %s has no written file left to undo (undone already)", tx.ID)
		pe.Data.SessionID, pe.Data.TxID = asked, tx.ID
		return protocol.UndoResult{}, pe
	}
	ids := make([]string, len(members))
	for i, r := range members {
		ids[i] = r.ID
	}
	// The undo's own record: until it is committed, a crash rolls the
	// files back to what the transaction wrote; once it is, recovery
	// records its sessions as undone (recoverTxs).
	utx := &txRecord{ID: tx.ID + "-undo", Undoes: tx.ID, Sessions: ids, Stage: protocol.TxOpen, CreatedAt: m.cfg.Clock.Now()}
	if len(undo) > 0 {
		if err := m.applyUndo(utx, undo); err != nil {
			if pe, ok := err.(*protocol.Error); ok {
				pe.Data.TxID = tx.ID
			}
			return protocol.UndoResult{}, err
		}
	}
	written := map[string]fileChange{}
	for _, u := range utx.Files {
		written[u.SessionID] = u
	}
	res := protocol.UndoResult{SessionID: asked, TxID: tx.ID}
	var firstErr error
	for _, r := range members {
		f := protocol.UndoResult{SessionID: r.ID, TargetFile: r.Target, TxID: tx.ID}
		if u, ok := written[r.ID]; ok {
			m.dropBackup(u.BackupID, u.BackupPieces)
			f.Removed = u.Kind == changeDelete
			if !f.Removed {
				f.RestoredBytes, f.SHA256 = u.NewBytes, u.NewSHA256
			}
		} else {
			f.Unchanged = true
		}
		f.RemovedDirs = m.fs().RemoveEmptyDirs(r.Result.CreatedDirs)
		if step := steps[r.ID]; step.merged {
			f.Merged, f.MergedHunks = true, hunksOf(step.kept)
		}
		r.Undone = true
		r.UpdatedAt = m.cfg.Clock.Now()
		if err := m.put(r); err != nil && firstErr == nil {
			firstErr = err
		}
		m.traceStage(r, trace.Bool("undone", true), trace.String("tx_id", tx.ID), trace.Bool("removed", f.Removed), trace.Int("restored_bytes", f.RestoredBytes), trace.Bool("unchanged", f.Unchanged))
		if r.ID == asked {
			res.TargetFile, res.Removed, res.RestoredBytes, res.SHA256, res.RemovedDirs =
				f.TargetFile, f.Removed, f.RestoredBytes, f.SHA256, f.RemovedDirs
			res.Merged, res.MergedHunks, res.Unchanged = f.Merged, f.MergedHunks, f.Unchanged
		}
		res.Files = append(res.Files, f)
	}
	if firstErr != nil {
		// The committed undo record stays: the next start records the
		// sessions as undone.
		return res, firstErr
	}
	m.dropTx(utx.ID)
	m.cfg.Logger.Info("transaction undone", "tx", tx.ID, "files", len(members))
	if res.TargetFile == "" {
		// The asked session had been undone on its own already.
		res.TargetFile = res.Files[0].TargetFile
	}
	return res, nil
}

// markUndone records the sessions of a committed undo (a crash came
// between its commit and their journaling) as undone.
func (m *Manager) markUndone(utx *txRecord) {
	for _, c := range utx.Files {
		m.dropBackup(c.BackupID, c.BackupPieces)
	}
	for _, id := range utx.Sessions {
		e, err := m.lookup(id)
		if err != nil {
			continue
		}
		e.mu.Lock()
		if r := &e.rec; !r.Undone {
			r.Undone = true
			r.UpdatedAt = m.cfg.Clock.Now()
			if err := m.put(r); err != nil {
				m.cfg.Logger.Error("recording a session of an undone transaction as undone", "tx", utx.Undoes, "session", id, "err", err)
			}
		}
		e.mu.Unlock()
	}
}
