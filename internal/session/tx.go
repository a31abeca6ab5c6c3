package session

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// MaxTxFiles bounds the files of one transaction.
const MaxTxFiles = protocol.MaxTxFiles

// txEntry is a tx.begin transaction held in memory; its lock serializes
// commit and abort.
type txEntry struct {
	mu  sync.Mutex
	rec txRecord
}

func (m *Manager) lookupTx(id string) (*txEntry, error) {
	if id == "" {
		return nil, missingField("tx_id")
	}
	m.mu.Lock()
	te, ok := m.txs[id]
	m.mu.Unlock()
	if !ok {
		pe := protocol.Errorf(protocol.CodeTxNotFound, protocol.ReasonTxNotFound, "no transaction %s", id)
		pe.Data.TxID = id
		return nil, pe
	}
	return te, nil
}

// TxBegin opens one session per file, all belonging to a new transaction
// that only TxCommit writes. Every target is checked before any session
// opens; two files may not name the same target.
func (m *Manager) TxBegin(p protocol.TxBeginParams) (protocol.TxBeginResult, error) {
	return m.txBeginAs("", p)
}

// txBeginAs is TxBegin for sessions of owner.
func (m *Manager) txBeginAs(owner string, p protocol.TxBeginParams) (protocol.TxBeginResult, error) {
	if len(p.Files) == 0 {
		return protocol.TxBeginResult{}, missingField("files")
	}
	if err := p.Check(); err != nil {
		return protocol.TxBeginResult{}, err
	}
	files := append([]protocol.BeginParams(nil), p.Files...)
	seen := map[string]int{}
	for i := range files {
		f := &files[i]
		if f.WorkspaceRoot == "" {
			f.WorkspaceRoot = p.WorkspaceRoot
		}
		if f.Intent == "" {
			f.Intent = p.Intent
		}
		if f.Supersedes != "" {
			pe := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
				"files[%d]: supersedes is not supported in a transaction; begin a new transaction", i)
			pe.Data.Field = fmt.Sprintf("files[%d].supersedes", i)
			return protocol.TxBeginResult{}, pe
		}
		target, err := m.guard().Resolve(f.TargetFile, f.WorkspaceRoot)
		if err != nil {
			err = pathError(err)
			if pe, ok := err.(*protocol.Error); ok {
				pe.Message = fmt.Sprintf("files[%d]: %s", i, pe.Message)
			}
			return protocol.TxBeginResult{}, err
		}
		if j, dup := seen[target]; dup {
			pe := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonDuplicate,
				"files[%d] and files[%d] both name %s; give each file once, with one operation", j, i, target)
			pe.Data.Path, pe.Data.Field = target, "files"
			return protocol.TxBeginResult{}, pe
		}
		seen[target] = i
	}

	now := m.cfg.Clock.Now()
	tx := txRecord{ID: m.cfg.NewID(), Intent: p.Intent, Stage: protocol.TxOpen, CreatedAt: now}
	res := protocol.TxBeginResult{TxID: tx.ID, Stage: tx.Stage}
	for i, f := range files {
		begun, err := m.beginAs(owner, f, m.cfg.NewID, now, tx.ID)
		if err != nil {
			for _, s := range res.Sessions {
				m.Abort(s.SessionID)
			}
			if pe, ok := err.(*protocol.Error); ok {
				pe.Message = fmt.Sprintf("files[%d]: %s", i, pe.Message)
			}
			return protocol.TxBeginResult{}, err
		}
		res.Sessions = append(res.Sessions, begun)
		tx.Sessions = append(tx.Sessions, begun.SessionID)
	}
	if err := m.putTx(&tx); err != nil {
		for _, s := range res.Sessions {
			m.Abort(s.SessionID)
		}
		return protocol.TxBeginResult{}, err
	}
	m.mu.Lock()
	m.txs[tx.ID] = &txEntry{rec: tx}
	m.mu.Unlock()
	m.cfg.Logger.Info("transaction begun", "tx", tx.ID, "files", len(files))
	return res, nil
}

// TxCommit checks every file of a transaction and then writes all of them
// or none. A commit that already succeeded returns its summaries again.
func (m *Manager) TxCommit(p protocol.TxCommitParams) (protocol.TxCommitResult, error) {
	te, err := m.lookupTx(p.TxID)
	if err != nil {
		return protocol.TxCommitResult{}, err
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	tx := &te.rec
	switch tx.Stage {
	case protocol.TxCommitted:
		return protocol.TxCommitResult{TxID: tx.ID, Stage: tx.Stage, Files: tx.Results}, nil
	case protocol.TxOpen, protocol.TxRolledBack:
	default:
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonTxState,
			"transaction %s is %s and cannot be committed; begin a new one", tx.ID, tx.Stage)
		pe.Data.TxID = tx.ID
		return protocol.TxCommitResult{}, pe
	}
	entries := make([]*entry, len(tx.Sessions))
	for i, id := range tx.Sessions {
		if entries[i], err = m.lookup(id); err != nil {
			return protocol.TxCommitResult{}, err
		}
	}
	unlock := lockAll(entries)
	defer unlock()
	// Its members' checks take one turn with the finalizes' (see
	// checkBudget), asked for once every lock is held: a commit never
	// waits for a lock while it holds part of the budget.
	var weight int64
	for _, e := range entries {
		weight += m.checkWeight(&e.rec)
	}
	held, _ := m.checks.acquire(context.Background(), weight)
	defer m.checks.release(held)

	if p.DryRun {
		return m.txDryRun(tx, entries, p)
	}
	checks, fileErrs := m.checkMembers(entries, p)
	if len(fileErrs) > 0 {
		return protocol.TxCommitResult{}, m.txRefused(tx, fileErrs)
	}

	changes := make([]fileChange, len(entries))
	counters := make([]*counter, len(entries))
	for i, e := range entries {
		r, c := &e.rec, checks[i]
		ch := fileChange{Path: r.Target, Kind: changeWrite, SessionID: r.ID, BackupID: r.ID, Workspace: m.workspaceOf(r)}
		if r.Operation == protocol.OpCreate {
			ch.Kind = changeCreate
		}
		if c.content != nil && !c.sampled {
			// The new content was computed from this original.
			sum := newCounter()
			sum.Write(c.original)
			ch.OldExists, ch.OldSHA256 = c.hasOriginal, sum.sum()
		} else {
			now, err := m.statTarget(m.fs(), r.Target)
			if err != nil {
				return protocol.TxCommitResult{}, confinedError(r.ID, "reading the current target", err)
			}
			ch.OldExists, ch.OldSHA256 = now.exists, now.sha256
		}
		if !ch.OldExists {
			ch.OldSHA256 = ""
		}
		writeOp := r.Operation
		if writeOp == protocol.OpPatch || writeOp == protocol.OpEdit {
			writeOp = protocol.OpOverwrite
		}
		counters[i] = newCounter()
		ch.fill = m.contentFill(r, r.Target, writeOp, c.content, "", counters[i])
		changes[i] = ch
	}
	for _, e := range entries {
		m.unwatch(e)
	}
	if err := m.applyChanges(tx, changes); err != nil {
		for _, e := range entries {
			m.watch(e)
		}
		if tx.Stage != protocol.TxRolledBack {
			tx.Error = err.Error()
			m.putTx(tx)
		}
		if pe, ok := err.(*protocol.Error); ok {
			pe.Data.TxID = tx.ID
		}
		return protocol.TxCommitResult{}, err
	}

	results := make([]protocol.FinalizeResult, len(entries))
	for i, e := range entries {
		r, c, ch := &e.rec, checks[i], changes[i]
		res := protocol.FinalizeResult{
			SessionID: r.ID, Stage: protocol.StageCompleted, TargetFile: r.Target, Operation: r.Operation,
			Bytes: counters[i].bytes, Lines: counters[i].lines(), SHA256: counters[i].sum(),
			FileBytes: ch.NewBytes, FileSHA256: ch.NewSHA256, EndMarkerSeen: r.Scanner.MarkerSeen(),
			TrailingBytes: r.Scanner.TrailingLen(), Mode: fmt.Sprintf("%#o", fs.FileMode(ch.NewMode).Perm()),
			Repairs: c.repairs, Validation: c.validation, Attempt: r.attempt(), Edit: c.edit, TxID: tx.ID, ElisionsMerged: c.elisionsMerged,
		}
		if ch.OldExists {
			res.BackupID = r.ID
		}
		if c.merged {
			res.Merged, res.MergedHunks = true, hunksOf(c.mergedHunks)
		}
		res.CreatedDirs = ch.CreatedDirs
		results[i] = res
	}

	if err := m.settleTx(tx, results, m.txAfters(entries, checks, changes)...); err != nil {
		for _, e := range entries {
			m.watch(e)
		}
		return protocol.TxCommitResult{}, err
	}
	for i, e := range entries {
		e.rec.BackupPieces = changes[i].BackupPieces
		results[i] = m.complete(e, results[i])
	}
	m.cfg.Logger.Info("transaction committed", "tx", tx.ID, "files", len(entries))
	return protocol.TxCommitResult{TxID: tx.ID, Stage: tx.Stage, Files: results}, nil
}

// checkMembers runs every check a single finalize runs, on every member,
// and collects what fails, file by file.
func (m *Manager) checkMembers(entries []*entry, p protocol.TxCommitParams) ([]checked, []protocol.FileError) {
	checks := make([]checked, len(entries))
	var fileErrs []protocol.FileError
	fail := func(r *record, err error, v *protocol.Validation, ed *protocol.EditResult) {
		fe := fileError(r, err)
		if v != nil {
			fe.Validation = v
		}
		if ed != nil {
			fe.Edit = ed
		}
		fileErrs = append(fileErrs, fe)
	}
	for i, e := range entries {
		r := &e.rec
		if !r.acceptsContent() {
			fail(r, closed(r), nil, nil)
			continue
		}
		if !r.Scanner.MarkerSeen() && !p.EndOfInput {
			fail(r, markerMissing(r), nil, nil)
			continue
		}
		var change *targetChange
		if !p.Force {
			var err error
			if change, err = m.changedSince(r); err != nil {
				fail(r, err, nil, nil)
				continue
			}
		}
		if err := m.recheckPath(r); err != nil {
			fail(r, err, nil, nil)
			continue
		}
		c, err := m.check(r)
		mergedOnBase := false
		if pe, ok := err.(*protocol.Error); ok && pe.Code == protocol.CodeEditFailed {
			// As a single finalize does: an edit that no longer applies
			// to a changed file is merged from the content at begin.
			onBase, hunks, ok, merr := m.mergeFailedEdit(r, change)
			if merr != nil {
				fail(r, merr, nil, nil)
				continue
			}
			if ok {
				c, err, mergedOnBase = onBase, nil, true
				c.mergedHunks, c.merged = hunks, true
			}
		}
		if err != nil {
			fail(r, err, nil, c.edit)
			continue
		}
		if change != nil && !mergedOnBase {
			// As a single finalize does: merged with the change, or
			// refused with the overlapping regions.
			if c.mergedHunks, err = m.mergeChange(r, &c, change); err != nil {
				fail(r, err, nil, nil)
				continue
			}
			c.merged = true
		}
		if c.validation.Blocked {
			pe := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonValidationFailed, "%s", c.validation.Summary)
			fail(r, pe, c.validation, nil)
			continue
		}
		checks[i] = c
	}
	return checks, fileErrs
}

// txRefused reports a commit that checked its files and wrote none. Content
// the policy or an edit refused cannot change, so such a transaction needs
// a new one; other failures (a marker still missing, a changed target)
// leave it open to commit again.
func (m *Manager) txRefused(tx *txRecord, fileErrs []protocol.FileError) error {
	final := false
	for _, fe := range fileErrs {
		if fe.Code == protocol.CodeValidationFailed || fe.Code == protocol.CodeEditFailed {
			final = true
		}
	}
	next := "Fix what each file reports and call tx.commit again."
	if final {
		tx.Stage = protocol.TxNeedsCorrections
		next = "Content a check refused stays as it is: abort this transaction and begin a new one with the corrected files."
	}
	tx.Error = fmt.Sprintf("%d of %d files failed the check", len(fileErrs), len(tx.Sessions))
	if err := m.putTx(tx); err != nil {
		return err
	}
	pe := protocol.Errorf(protocol.CodeTxFailed, protocol.ReasonTxRefused,
		"transaction %s: %s; nothing was written. First: %s: %s %s",
		tx.ID, tx.Error, fileErrs[0].TargetFile, sentence(fileErrs[0].Message), next)
	pe.Data.TxID, pe.Data.Files, pe.Data.Next = tx.ID, fileErrs, next
	return pe
}

// txDryRun returns each file's diff, writing nothing.
func (m *Manager) txDryRun(tx *txRecord, entries []*entry, p protocol.TxCommitParams) (protocol.TxCommitResult, error) {
	out := protocol.TxCommitResult{TxID: tx.ID, Stage: tx.Stage, DryRun: true}
	var fileErrs []protocol.FileError
	for _, e := range entries {
		r := &e.rec
		if !r.Scanner.MarkerSeen() && !p.EndOfInput {
			fileErrs = append(fileErrs, fileError(r, markerMissing(r)))
			continue
		}
		r.DryRun = true
		res, err := m.dryRun(r)
		if err != nil {
			fileErrs = append(fileErrs, fileError(r, err))
			continue
		}
		res.TxID = tx.ID
		out.Files = append(out.Files, res)
	}
	if len(fileErrs) > 0 {
		pe := protocol.Errorf(protocol.CodeTxFailed, protocol.ReasonTxRefused,
			"transaction %s: %s cannot be checked yet; first: %s: %s", tx.ID, textfmt.Count(len(fileErrs), "file", "files"), fileErrs[0].TargetFile, fileErrs[0].Message)
		pe.Data.TxID, pe.Data.Files = tx.ID, fileErrs
		return protocol.TxCommitResult{}, pe
	}
	return out, nil
}

// TxAbort discards a transaction that is not committed, and its sessions.
func (m *Manager) TxAbort(id string) (protocol.TxInfo, error) {
	te, err := m.lookupTx(id)
	if err != nil {
		return protocol.TxInfo{}, err
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	tx := &te.rec
	if tx.Stage == protocol.TxCommitted {
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonTxState,
			"transaction %s is committed; undo its sessions one by one instead", tx.ID)
		pe.Data.TxID = tx.ID
		return protocol.TxInfo{}, pe
	}
	for _, sid := range tx.Sessions {
		if e, err := m.lookup(sid); err == nil {
			e.mu.Lock()
			m.abortLocked(e)
			e.mu.Unlock()
		}
	}
	tx.Stage = protocol.TxAborted
	if err := m.putTx(tx); err != nil {
		return protocol.TxInfo{}, err
	}
	m.cfg.Logger.Info("transaction aborted", "tx", tx.ID)
	return tx.info(), nil
}

// TxGet describes a transaction.
func (m *Manager) TxGet(id string) (protocol.TxInfo, error) {
	te, err := m.lookupTx(id)
	if err != nil {
		return protocol.TxInfo{}, err
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.rec.info(), nil
}

func (tx *txRecord) info() protocol.TxInfo {
	return protocol.TxInfo{TxID: tx.ID, Intent: tx.Intent, Stage: tx.Stage, Sessions: tx.Sessions,
		CreatedAt: tx.CreatedAt, UpdatedAt: tx.UpdatedAt, Error: tx.Error, Files: tx.Results}
}

// fileError describes what err says about r's file, keeping a protocol
// error's code, reason, findings and per-block edit results.
func fileError(r *record, err error) protocol.FileError {
	fe := protocol.FileError{SessionID: r.ID, TargetFile: r.Target, Code: protocol.CodeIO,
		Reason: protocol.ReasonIO, Message: err.Error()}
	if pe, ok := err.(*protocol.Error); ok {
		fe.Code, fe.Reason, fe.Message = pe.Code, pe.Data.Reason, pe.Message
		fe.Validation, fe.Edit = pe.Data.Validation, pe.Data.Edit
	}
	return fe
}

// txMember refuses a call that would write one file of a transaction alone.
func txMember(r *record, what string) error {
	pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonTxMember,
		"session %s belongs to transaction %s: %s; use tx.commit (or tx.abort)", r.ID, r.TxID, what)
	pe.Data.SessionID, pe.Data.TxID = r.ID, r.TxID
	return pe
}
