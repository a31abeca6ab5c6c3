package session

import (
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/protocol"
)

// An undo puts back what a session replaced and keeps whatever anyone
// changed since, or refuses and changes nothing: it never loses the
// person's bytes and never writes conflict markers. File by file:
//
//   - a file the session wrote over: its old content, or, when the file
//     changed since, the session's change reverted three-way (merge.go);
//   - a file the session created: deleted when it still holds what the
//     session wrote; left alone and reported unchanged when someone deleted
//     it since; refused when it holds something else (deleting it would
//     take those changes with it), listing the changes where what the
//     session wrote was kept: a multi-file edit keeps it, a plain create
//     does not (it would store every new file a second time), and its
//     refusal names the two hashes;
//   - a file the session deleted: created again with its old content;
//     reported unchanged when someone put that same content back; refused,
//     with both contents, when the path holds another file now;
//   - a file the session moved: moved back, and when the moved file was
//     edited since, moved back with those edits (merged three-way with the
//     move's own change of content, if it made one), provided its old path
//     is still free; otherwise refused.
//
// The files of one undo are written as one transaction (applyChanges), all
// or none, so a crash leaves the undo finished or not begun.

// failpointUndoApplied is reached once an undo's files are in place and
// before its record says so: a crash there is rolled back at the next
// start, putting back the files as they were before the undo.
const failpointUndoApplied = "undo.applied"

// undoStep is how an undo leaves one file.
type undoStep struct {
	// change is the write or removal, nil when the file is already as
	// the undo would leave it.
	change *fileChange
	// merged is set when the undo keeps a change made since the session
	// wrote the file; kept are its hunks.
	merged bool
	kept   []merge.Hunk
}

// planUndo decides how a finalized session's write to its target is
// undone, from the target as it is now (see above). backupID names the
// backup of the file as it is now, kept while the undo commits.
func (m *Manager) planUndo(r *record, now targetState, backupID string) (undoStep, error) {
	u := fileChange{Path: r.Target, SessionID: r.ID, BackupID: backupID, OldExists: now.exists, OldSHA256: now.sha256}
	created := r.BackupPieces == 0
	if created && r.SkipBackup && r.BaseExists {
		// backup_required: false over an existing file: what it replaced
		// was never kept, and removing the file would lose it all.
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNothingToUndo,
			"session %s kept no copy of the %s it replaced (it began with backup_required false), so it cannot be undone", r.ID, r.Target)
		pe.Data.SessionID, pe.Data.Path = r.ID, r.Target
		return undoStep{}, pe
	}
	same := now.exists && now.sha256 == r.Result.FileSHA256
	switch {
	case same && created:
		u.Kind = changeDelete
	case same:
		u.Kind, u.fill = changeWrite, m.backupFill(r.ID, r.BackupPieces)
	case created && !now.exists:
		return undoStep{}, nil
	case created:
		return undoStep{}, m.createdChanged(r, r.Target, r.Result.FileSHA256, afterKey(r.ID), r.AfterPieces, now)
	default:
		content, kept, err := m.revertMerged(r, now)
		if err != nil {
			return undoStep{}, err
		}
		u.Kind, u.fill = changeWrite, fillWith(content)
		return undoStep{change: &u, merged: true, kept: kept}, nil
	}
	return undoStep{change: &u}, nil
}

func fillWith(content []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(content); return err }
}

// createdChanged refuses to undo the creation of a file that someone
// changed since: deleting it would delete their change. The error lists
// that change, region by region (Base what the session wrote, File what
// the file holds now, Session empty: what the undo would leave), where
// what the session wrote was kept (afterPieces).
func (m *Manager) createdChanged(r *record, path, wrote, afterID string, afterPieces uint64, now targetState) *protocol.Error {
	id := r.ID
	pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
		"%s was created by session %s and changed since; undoing the session would delete the file and that change with it, "+
			"so it is refused and the file is left as it is. Delete the file yourself if neither is wanted", path, id)
	pe.Data.SessionID, pe.Data.Path = id, path
	pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = wrote, now.sha256
	if afterPieces == 0 || now.size > mergeMaxBytes {
		return pe
	}
	after, err := m.readBackup(afterID, afterPieces)
	if err != nil || sum(after) != wrote {
		return pe
	}
	cur, ok, err := m.readForMerge(m.fs(), path)
	if err != nil || !ok {
		return pe
	}
	// The regions are reported as the file's text: a UTF-16 file's bytes
	// would show as NULs between the letters.
	hunks := m.merge3(r, path, after, cur, after).OursHunks
	if len(hunks) == 0 {
		// Changed in its line endings alone, which the text merge takes
		// for no change: the bytes say where.
		hunks = merge.Merge3(after, cur, after).OursHunks
	}
	for _, h := range hunks[:min(len(hunks), protocol.MaxMergeReports)] {
		b, t1 := cut(h.Old)
		f, t2 := cut(h.New)
		pe.Data.Conflicts = append(pe.Data.Conflicts, protocol.MergeConflict{StartLine: h.BaseStart + 1, EndLine: h.BaseEnd,
			Base: b, File: f, Truncated: t1 || t2})
	}
	pe.Message += " (" + strconv.Itoa(len(hunks)) + " region(s) changed since)"
	return pe
}

// deletedRecreated refuses to undo the deletion of a file whose path holds
// another file now: putting the deleted one back would replace it. The
// error carries both: File the file there now, Session the deleted one.
func (m *Manager) deletedRecreated(id string, c fileChange, now targetState) *protocol.Error {
	pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
		"%s was deleted by session %s and a different file was created there since; undoing the session would replace that file "+
			"with the deleted one, so it is refused and both are kept (the error carries both)", c.Path, id)
	pe.Data.SessionID, pe.Data.Path = id, c.Path
	pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = protocol.AbsentSHA256, now.sha256
	// Each side is shown cut, so only its start is read.
	conflict := protocol.MergeConflict{StartLine: 1}
	if f, err := m.openRegular(m.fs(), c.Path); err == nil {
		cur, err := io.ReadAll(io.LimitReader(f, protocol.MaxMergeTextBytes+1))
		f.Close()
		if err == nil {
			conflict.File, conflict.Truncated = cut(cur)
		}
	}
	if old, err := m.readBackup(c.BackupID, min(c.BackupPieces, 1)); err == nil {
		var t bool
		conflict.Session, t = cut(old)
		conflict.Truncated = conflict.Truncated || t || c.BackupPieces > 1
	}
	pe.Data.Conflicts = []protocol.MergeConflict{conflict}
	return pe
}

// moveBack is the content a multi-file edit's move from src to dest puts
// back at src when dest was edited since: the edited file, with the
// move's own change of content reverted three-way (base what the move
// wrote, ours the file now, theirs what src held). It is refused when src
// is taken again or the edits overlap the move's change.
func (m *Manager) moveBack(r *record, dest, src fileChange, now targetState) ([]byte, []merge.Hunk, error) {
	refuse := func(why string) *protocol.Error {
		pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
			"%s was moved to %s by session %s and changed since; %s, so the undo is refused and nothing was changed", src.Path, dest.Path, r.ID, why)
		pe.Data.SessionID, pe.Data.Path = r.ID, dest.Path
		pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = dest.NewSHA256, now.sha256
		return pe
	}
	srcNow, err := m.statTarget(m.fs(), src.Path)
	if err != nil {
		return nil, nil, confinedError(r.ID, "reading "+src.Path, err)
	}
	if srcNow.exists {
		return nil, nil, refuse("moving it back would replace " + src.Path + ", which exists again")
	}
	if now.size > mergeMaxBytes {
		return nil, nil, refuse("it is too large to merge")
	}
	cur, ok, err := m.readForMerge(m.fs(), dest.Path)
	if err != nil || !ok {
		return nil, nil, refuse("it could not be read whole")
	}
	if dest.NewSHA256 == src.OldSHA256 {
		// A move that kept the content: the edited file goes back as is.
		return cur, nil, nil
	}
	if dest.AfterPieces == 0 || src.BackupPieces == 0 || src.BackupPieces > maxMergePieces {
		return nil, nil, refuse("the move changed its content too, and what it wrote was not kept to merge with, or is too large to merge")
	}
	after, err := m.readBackup(afterKey(dest.BackupID), dest.AfterPieces)
	if err != nil || sum(after) != dest.NewSHA256 {
		return nil, nil, refuse("what the move wrote could not be read back")
	}
	before, err := m.readBackup(src.BackupID, src.BackupPieces)
	if err != nil {
		return nil, nil, refuse("the moved file's old content could not be read back")
	}
	res := m.merge3(r, dest.Path, after, cur, before)
	if !res.Clean {
		pe := mergeRefused(r, "session "+r.ID+" moved it there", res.Conflicts, true, dest.NewSHA256, sum(cur))
		pe.Data.Path = dest.Path
		pe.Message = strings.Replace(pe.Message, r.Target, dest.Path, 1)
		return nil, nil, pe
	}
	return res.Merged, res.OursHunks, nil
}

// applySingleUndo writes the undo of one file (a session's only target),
// recorded in utx, and returns the change with what it wrote. One rename
// cannot leave a mix, so unlike a transaction's undo it keeps no backup
// of the file to roll back to; its record instead names the content the
// file will hold before the rename, and a crash is settled forward
// (rollForward): a file found holding that content has its session
// recorded undone, any other is left as it is, the undo not begun. The
// caller records the session undone and then drops utx.
func (m *Manager) applySingleUndo(utx *txRecord, c fileChange) (fileChange, error) {
	utx.Files, utx.Stage, utx.RollForward = []fileChange{c}, txPreparing, true
	// The record names the file before a temp file exists, so a crash
	// while staging leaves one the next start removes (unprepare).
	if err := m.putTx(utx); err != nil {
		return c, err
	}
	fail := func(err error) (fileChange, error) {
		m.cleanTxTemps(utx)
		m.dropTx(utx.ID)
		return c, err
	}
	d, name, err := m.fs().Within(c.Workspace).OpenParent(c.Path)
	if err != nil {
		return fail(confinedError(c.SessionID, "opening the directory of "+c.Path, err))
	}
	defer d.Close()
	var staged *atomicfile.Staged
	if c.Kind != changeDelete {
		staged, err = atomicfile.Stage(d, name, atomicfile.Options{Mode: atomicfile.Replace, Perm: 0o644, Tag: utx.ID}, c.fill)
		if err != nil {
			return fail(confinedError(c.SessionID, "staging "+c.Path, err))
		}
		res := staged.Result()
		c.NewSHA256, c.NewBytes, c.NewMode = res.SHA256, res.Bytes, uint32(res.Mode)
	}
	utx.Files[0], utx.Stage = c, protocol.TxCommitting
	if err := m.putTx(utx); err != nil {
		if staged != nil {
			staged.Discard()
		}
		return fail(err)
	}
	// The file must still be what the undo was computed against.
	if now, err := m.statTarget(m.fs(), c.Path); err != nil || !c.isOld(now) {
		if staged != nil {
			staged.Discard()
		}
		pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
			"%s changed on disk while its undo was prepared; nothing was undone. Ask for the undo again", c.Path)
		pe.Data.SessionID, pe.Data.Path = c.SessionID, c.Path
		return fail(pe)
	}
	if c.Kind == changeDelete {
		if err = d.CheckWritable(name); err == nil {
			err = atomicfile.Remove(d, name)
		}
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else if _, err = staged.Commit(); errors.Is(err, atomicfile.ErrNotDurable) {
		m.cfg.Logger.Warn("undone file not yet durable", "session", c.SessionID, "path", c.Path, "err", err)
		err = nil
	}
	if err != nil {
		if staged != nil {
			staged.Discard()
		}
		return fail(confinedError(c.SessionID, "writing "+c.Path, err))
	}
	failpoint.Hit(failpointUndoApplied)
	return c, nil
}

// rollForward settles the record of a one-file undo a crash interrupted
// after it said committing: finished when the file holds what the undo
// wrote, not begun otherwise (the file as before the undo, or changed by
// someone since, which is left alone).
func (m *Manager) rollForward(tx *txRecord) {
	done := len(tx.Files) > 0
	for _, c := range tx.Files {
		now, err := m.statTarget(m.fs(), c.Path)
		if err != nil || !c.isNew(now) {
			done = false
		}
	}
	m.cleanTxTemps(tx)
	if done {
		m.cfg.Logger.Info("finishing an undo a crash interrupted after its file was written", "session", tx.Undoes)
		m.markUndone(tx)
		return
	}
	m.cfg.Logger.Info("an undo a crash interrupted before its file was written is not begun", "session", tx.Undoes)
}
