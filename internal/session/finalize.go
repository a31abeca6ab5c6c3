package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/protocol"
)

// trailingPreviewBytes bounds the text after the marker echoed back to the
// client, so a chatty model cannot make a summary large.
const trailingPreviewBytes = 200

// Finalize writes the session's content to its target atomically and
// returns a summary. The content is streamed from the journal into a temp
// file, never held whole in memory.
func (m *Manager) Finalize(p protocol.FinalizeParams) (protocol.FinalizeResult, error) {
	return m.FinalizeContext(context.Background(), p)
}

// FinalizeContext is Finalize for a caller that may be gone before its
// turn: content checked in memory waits for room under the daemon's
// bound (Config.CheckMemoryBytes), and stops waiting, with ctx's error,
// when ctx is done. Once its check has begun it runs to the end.
func (m *Manager) FinalizeContext(ctx context.Context, p protocol.FinalizeParams) (protocol.FinalizeResult, error) {
	e, err := m.lookup(p.SessionID)
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	if r.Stage == protocol.StageCompleted && r.Result != nil {
		// Finalize is idempotent: a client that lost the reply (or a
		// crash right after the write) gets the same summary again.
		return *r.Result, nil
	}
	if r.TxID != "" {
		return protocol.FinalizeResult{}, txMember(r, "it is written with the other files of its transaction")
	}
	truncated := r.Stage == protocol.StageTruncated
	if !r.Stage.Open() && !truncated {
		return protocol.FinalizeResult{}, closed(r)
	}
	if !r.Scanner.MarkerSeen() && !p.EndOfInput {
		return protocol.FinalizeResult{}, markerMissing(r)
	}
	held, err := m.checks.acquire(ctx, m.checkWeight(r))
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	defer m.checks.release(held)
	if p.DryRun {
		r.DryRun = true
		if ok, content, err := m.isEnvelope(r); err != nil || ok {
			if err != nil {
				return protocol.FinalizeResult{}, err
			}
			return m.finalizeEnvelope(e, content, p.Force, true)
		}
		return m.dryRun(r)
	}
	return m.finalizeLocked(e, p.Force)
}

// dryRun repairs and validates the content and returns the diff it would
// apply, changing nothing.
func (m *Manager) dryRun(r *record) (protocol.FinalizeResult, error) {
	c, err := m.check(r)
	// A dry run shows what a finalize would write now: merged with a
	// change made since begin, or what would refuse it.
	var merged []merge.Hunk
	change, cerr := m.changedSince(r)
	mergedOnBase := false
	if pe, ok := err.(*protocol.Error); ok && pe.Code == protocol.CodeEditFailed {
		onBase, hunks, ok, merr := m.mergeFailedEdit(r, change)
		if mpe, isPE := merr.(*protocol.Error); isPE {
			// The merge's refusal, as a finalize would give it.
			pe, ok = mpe, false
		} else if merr != nil {
			return protocol.FinalizeResult{}, merr
		}
		if !ok {
			// A dry run reports a failed edit as its result, per block.
			return protocol.FinalizeResult{SessionID: r.ID, Stage: r.Stage, TargetFile: r.Target, Operation: r.Operation,
				DryRun: true, Edit: c.edit, Diff: "", Warnings: []protocol.Warning{{Code: pe.Data.Reason, Message: pe.Message}}}, nil
		}
		c, merged, mergedOnBase, err = onBase, hunks, true, nil
	}
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	if cerr == nil && change != nil && !mergedOnBase {
		merged, cerr = m.mergeChange(r, &c, change)
	}
	res := protocol.FinalizeResult{
		SessionID: r.ID, Stage: r.Stage, TargetFile: r.Target, Operation: r.Operation,
		EndMarkerSeen: r.Scanner.MarkerSeen(), TrailingBytes: r.Scanner.TrailingLen(),
		Repairs: c.repairs, Validation: c.validation, Attempt: r.attempt(), DryRun: true, Edit: c.edit, ElisionsMerged: c.elisionsMerged,
	}
	if pe, ok := cerr.(*protocol.Error); ok {
		res.Warnings = append(res.Warnings, protocol.Warning{Code: pe.Data.Reason, Message: pe.Message})
	} else if change != nil {
		res.Merged, res.MergedHunks = true, hunksOf(merged)
	}
	if c.content == nil {
		res.Bytes = r.contentBytes()
		res.Diff = "(content too large to diff)"
		return res, nil
	}
	if c.sampled {
		sum := newCounter()
		sum.Write(c.content)
		res.Bytes, res.Lines, res.SHA256 = sum.bytes, sum.lines(), sum.sum()
		res.Diff = "(the file it replaces is too large to diff)"
		return res, nil
	}
	after := c.content
	if r.Operation == protocol.OpAppend {
		after = append(append([]byte(nil), c.original...), c.content...)
	}
	sum := newCounter()
	sum.Write(c.content)
	res.Bytes, res.Lines, res.SHA256 = sum.bytes, sum.lines(), sum.sum()
	// A person reads the diff as text, in whatever encoding the file is.
	newText, oldText := m.textOf(r, r.Target, after, c.original)
	res.Diff = validate.Diff(r.Target, oldText, newText)
	return res, nil
}

// finalizeLocked writes the content of an entry whose lock is held.
func (m *Manager) finalizeLocked(e *entry, force bool) (protocol.FinalizeResult, error) {
	r := &e.rec
	// The streamed file is used by this attempt or by none.
	defer m.dropStream(e)
	if r.files == nil {
		r.files = m.fs().Scoped()
		defer func() {
			r.files.Close()
			r.files = nil
		}()
	}
	if err := m.recheckPath(r); err != nil {
		return protocol.FinalizeResult{}, err
	}
	if ok, content, err := m.isEnvelope(r); err != nil || ok {
		if err != nil {
			return protocol.FinalizeResult{}, err
		}
		return m.finalizeEnvelope(e, content, force, false)
	}
	var change *targetChange
	// A session.write began in this request, a moment ago, from the
	// target as it read it then (see baseRead): reading and hashing it
	// again now would guard no wider a window than the one left between
	// that read and the rename anyway.
	if !force && r.inline == nil && r.base == nil {
		var err error
		if change, err = m.changedSince(r); err != nil {
			return protocol.FinalizeResult{}, err
		}
	}
	c, err := m.check(r)
	var merged []merge.Hunk
	mergedOnBase := false
	if pe, ok := err.(*protocol.Error); ok && pe.Code == protocol.CodeEditFailed {
		// An edit that no longer applies to a file someone changed is
		// applied to the content it was written against, and merged.
		onBase, hunks, ok, merr := m.mergeFailedEdit(r, change)
		if merr != nil {
			return protocol.FinalizeResult{}, merr
		}
		if !ok {
			return protocol.FinalizeResult{}, m.refuseEdit(e, pe, c.edit)
		}
		c, merged, mergedOnBase, err = onBase, hunks, true, nil
	}
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	if change != nil && !mergedOnBase {
		if merged, err = m.mergeChange(r, &c, change); err != nil {
			return protocol.FinalizeResult{}, err
		}
	}
	m.cfg.Trace.Record(trace.Event{Time: m.cfg.Clock.Now(), Type: protocol.TraceValidation, SessionID: r.ID, Attrs: []trace.Attr{
		trace.Bool("ok", !c.validation.Blocked), trace.String("file_type", c.validation.FileType), trace.Any("findings", c.validation.Findings),
		trace.Any("repairs", c.repairs), trace.String("skipped", c.validation.Skipped), trace.String("summary", c.validation.Summary),
	}})
	if c.validation.Blocked {
		return protocol.FinalizeResult{}, m.refuse(e, c.validation)
	}
	if c.edit != nil && c.edit.AlreadyApplied && c.content != nil {
		return m.completeUnwritten(e, c)
	}
	writeOp := r.Operation
	if writeOp == protocol.OpPatch || writeOp == protocol.OpEdit {
		writeOp = protocol.OpOverwrite
	}
	pending := m.pendingSum(r, c)
	// The file is written while the backup is taken and the record is
	// journaled, and named only after (see early): started here, its
	// write and sync have the backup's and the record's time to overlap.
	staged := r.early
	r.early = nil
	taken := staged.take(writeOp, c.content)
	if staged != nil && testHookEarly != nil {
		testHookEarly(taken)
	}
	if taken {
		staged.sum = pending
	} else {
		if staged != nil {
			staged.drop()
		}
		staged = m.stageStreamed(e, writeOp, c, pending)
	}
	if !taken && staged == nil {
		staged = m.stageEarly(r, writeOp, c.content, pending)
	}
	discard := func() {
		if staged != nil {
			staged.discard()
		}
	}

	var (
		pieces    uint64
		lastPiece *store.Put
	)
	keepAfter := c.content != nil && r.Operation != protocol.OpAppend && len(c.content) <= mergeMaxBytes
	// A create replaces nothing: its rename fails if a file appeared
	// meanwhile. Looking for one to back up would cost a path check and
	// an open for nothing.
	if !r.SkipBackup && writeOp != protocol.OpCreate {
		if keepAfter {
			// The backup and what this write keeps for a three-way undo
			// are stored together: room for both.
			_ = m.roomFor(int64(len(c.content) + len(c.original)))
		}
		pieces, lastPiece, err = m.backup(r)
	}
	if err != nil {
		discard()
		pe := protocol.Errorf(protocol.CodeIO, protocol.ReasonBackupFailed,
			"keeping a backup of %s before replacing it failed, so nothing was written: %v", r.Target, err)
		pe.Data.SessionID = r.ID
		return protocol.FinalizeResult{}, pe
	}
	r.BackupPieces = pieces
	if lastPiece != nil && keepAfter {
		// What this finalize writes, beside what it replaces: an undo
		// after a later edit reverts three-way from it.
		after := piecesOf(afterKey(r.ID), c.content)
		lastPiece.KVs = append(lastPiece.KVs, after.KVs...)
		r.AfterPieces = uint64(len(after.KVs))
	}
	prev := r.Stage
	r.PendingSHA256 = pending
	r.Stage = protocol.StageFinalizing
	r.UpdatedAt = m.cfg.Clock.Now()
	if err := m.putFinalizing(r, lastPiece); err != nil {
		discard()
		r.Stage = prev
		return protocol.FinalizeResult{}, err
	}
	m.traceStage(r, trace.Bool("force", force))
	// Our own rename must not read as an external change.
	m.unwatch(e)
	// Whatever way this ends, the directory's sync is waited for before
	// the request's view of the files closes.
	defer staged.dirSynced()
	res, err := m.writeContentStaged(r, r.Target, writeOp, c.content, "", staged)
	if err != nil {
		// Nothing was written, and the content is still journaled: the
		// session stays finalizable.
		r.Stage = prev
		if perr := m.put(r); perr != nil {
			m.cfg.Logger.Error("recording a failed finalize", "session", r.ID, "err", perr)
		}
		m.watch(e)
		m.traceStage(r, trace.String("error", err.Error()))
		return protocol.FinalizeResult{}, err
	}
	res.Repairs, res.Validation, res.Attempt, res.Edit = c.repairs, c.validation, r.attempt(), c.edit
	res.ElisionsMerged = c.elisionsMerged
	// The file was written whole, but the session did a patch or an edit.
	res.Operation = r.Operation
	if pieces > 0 {
		res.BackupID = r.ID
	}
	if change != nil {
		res.Merged, res.MergedHunks = true, hunksOf(merged)
	}
	return m.completeWritten(e, res, staged.dirSynced), nil
}

// pendingSum is the SHA-256 of the file a finalize of r with the checked
// content c writes, journaled with its record; "" when the content is too
// large to check (streamed from the journal, whose running sum the write
// uses). Content the check left as it was is the content a running sum of
// its appends took, when there is one: it is not hashed a second time.
func (m *Manager) pendingSum(r *record, c checked) string {
	if c.content == nil {
		return ""
	}
	if c.asSent && r.Operation != protocol.OpAppend && len(r.Chain) == 0 {
		if sum := r.sum.sum(int64(len(c.content)), r.Scanner.Total); sum != "" {
			return sum
		}
	}
	whole := newCounter()
	if r.Operation == protocol.OpAppend {
		whole.Write(c.original)
	}
	whole.Write(c.content)
	return whole.sum()
}

// completeUnwritten completes an edit that was already applied without
// writing: rewriting the same bytes would change nothing but the file's
// time and inode, and a later undo would have no old content to restore.
func (m *Manager) completeUnwritten(e *entry, c checked) (protocol.FinalizeResult, error) {
	r := &e.rec
	now, err := m.statTarget(m.fsOf(r), r.Target)
	if err != nil {
		return protocol.FinalizeResult{}, confinedError(r.ID, "reading the current target", err)
	}
	sum := newCounter()
	sum.Write(c.content)
	res := protocol.FinalizeResult{
		SessionID: r.ID, Stage: protocol.StageCompleted, TargetFile: r.Target, Operation: r.Operation,
		Bytes: sum.bytes, Lines: sum.lines(), SHA256: sum.sum(), FileBytes: now.size, FileSHA256: now.sha256,
		EndMarkerSeen: r.Scanner.MarkerSeen(), TrailingBytes: r.Scanner.TrailingLen(),
		Mode: fmt.Sprintf("%#o", now.perm), Repairs: c.repairs, Validation: c.validation, ElisionsMerged: c.elisionsMerged,
		Attempt: r.attempt(), Edit: c.edit, NothingWritten: true,
	}
	return m.complete(e, res), nil
}

// recheckPath resolves the target again: it was checked at begin, but a
// directory on the way may have been swapped for a symlink since.
func (m *Manager) recheckPath(r *record) error {
	fsys := m.fsOf(r)
	target, err := fsys.Guard().ResolveIn(fsys.PathScope(), r.Target, m.workspaceOf(r))
	if err != nil {
		return pathError(err)
	}
	if target != r.Target {
		pe := protocol.Errorf(protocol.CodePathNotAllowed, protocol.ReasonSymlinkEscape,
			"%s now resolves to %s: a symlink changed since the session began; begin a new session", r.Target, target)
		pe.Data.Path = r.Target
		return pe
	}
	return nil
}

// journaling says when a finished session's record is committed.
type journaling int

const (
	// journalNow commits it before the reply.
	journalNow journaling = iota
	// journalWithNextCommit lets it ride the next commit (completeWritten).
	journalWithNextCommit
)

// complete records a successful write and releases what the session held.
func (m *Manager) complete(e *entry, res protocol.FinalizeResult) protocol.FinalizeResult {
	return m.completeAs(e, res, journalNow, nil)
}

// completeWritten is complete for a session whose journaled stage is
// finalizing and whose file is now in place (written, synced, named):
// its record and the drop of its chunks ride the next commit instead of
// holding the reply for a commit of their own. A crash before that commit
// leaves the session finalizing with its chunks, which recovery completes
// when the target holds what the session wrote (the hash journaled with
// finalizing, or the journal itself for content too large to check).
//
// The file's directory may still be syncing: the finished record is
// encoded meanwhile, and journaled and published, and the summary
// returned, only once dirSynced has returned. A failed directory sync is
// reported as the write's warning, as a synchronous one is.
func (m *Manager) completeWritten(e *entry, res protocol.FinalizeResult, dirSynced func() error) protocol.FinalizeResult {
	return m.completeAs(e, res, journalWithNextCommit, dirSynced)
}

func (m *Manager) completeAs(e *entry, res protocol.FinalizeResult, when journaling, dirSynced func() error) protocol.FinalizeResult {
	r := &e.rec
	res.Warnings = append(res.Warnings, expectationWarnings(r, res)...)
	r.Stage = protocol.StageCompleted
	r.Result = &res
	r.UpdatedAt = m.cfg.Clock.Now()
	var meta []byte
	if dirSynced != nil {
		r.forgetPendingBase()
		meta, _ = r.marshal() // an error is met again below
		if err := dirSynced(); err != nil {
			// The rename happened; only the directory sync failed.
			res.Warnings = append([]protocol.Warning{{Code: "not_durable", Message: err.Error()}}, res.Warnings...)
			r.Result = &res
			meta = nil
		}
	}
	// The summary is what a finished session keeps; its content is on
	// disk, so the chunks go in the same commit.
	var err error
	if when == journalWithNextCommit {
		err = m.putFinishedLater(e, meta)
	} else {
		err = m.putFinished(r)
	}
	if err != nil {
		// The file is written; the record will say finalizing until the
		// next start recognises the new content and completes it.
		m.cfg.Logger.Error("recording a completed session", "session", r.ID, "err", err)
	}
	m.stopTimers(e)
	m.unwatch(e)
	for _, l := range r.Chain {
		m.completeContinued(l.ID, r.ID)
	}
	if m.logsInfo() {
		m.cfg.Logger.Info("session finalized", "session", r.ID, "target", r.Target,
			"bytes", res.Bytes, "lines", res.Lines, "sha256", res.SHA256, "merged", res.Merged)
	}
	m.cfg.Trace.Record(trace.Event{Time: r.UpdatedAt, Type: protocol.TraceWrite, SessionID: r.ID, Attrs: []trace.Attr{
		trace.String("target", res.TargetFile), trace.String("operation", string(res.Operation)), trace.Int("bytes", res.Bytes), trace.Int("lines", res.Lines),
		trace.String("sha256", res.SHA256), trace.Int("file_bytes", res.FileBytes), trace.String("mode", res.Mode), trace.Any("warnings", res.Warnings),
		trace.Bool("merged", res.Merged), trace.Int("merged_hunks", int64(len(res.MergedHunks))),
	}})
	m.traceStage(r)
	m.cfg.Notify(r.ID, protocol.NotifySessionFinalized, res)
	return res
}

// completeContinued marks a truncated session whose content a continuation
// wrote as completed.
func (m *Manager) completeContinued(id, by string) {
	e, err := m.lookup(id)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rec.Stage = protocol.StageCompleted
	e.rec.ContinuedBy = by
	e.rec.UpdatedAt = m.cfg.Clock.Now()
	if err := m.putFinished(&e.rec); err != nil {
		m.cfg.Logger.Warn("recording a continued session", "session", id, "err", err)
	}
}

// write streams the (chained) content from the journal to path. note, if
// not empty, is appended after the content.
func (m *Manager) write(r *record, path string, op protocol.Operation, note string) (protocol.FinalizeResult, error) {
	return m.writeContent(r, path, op, nil, note)
}

// writeContent writes content (repaired, in memory) to path, or streams the
// journal when content is nil.
func (m *Manager) writeContent(r *record, path string, op protocol.Operation, repaired []byte, note string) (protocol.FinalizeResult, error) {
	return m.writeContentStaged(r, path, op, repaired, note, nil)
}

// writeContentStaged is writeContent, committing the file staged early
// (with repaired as its content and no note) when there is one.
func (m *Manager) writeContentStaged(r *record, path string, op protocol.Operation, repaired []byte, note string, staged *early) (protocol.FinalizeResult, error) {
	mode := atomicfile.Replace
	if op == protocol.OpCreate {
		mode = atomicfile.CreateNew
	}
	// Where the file holds exactly the session's content, the file's own
	// hash is the content's: hashing the bytes twice cost a tenth of a
	// large write's CPU.
	sameBytes := op != protocol.OpAppend && note == ""
	content := newCounter()
	if sameBytes {
		content.h = nil
	}
	var (
		written atomicfile.Result
		made    []string
		err     error
		done    bool
	)
	if staged != nil && !staged.stillThere(m, r, path) {
		// Its directory moved or went since the file was started:
		// written the usual way, where the path leads now.
		staged.discard()
		staged = nil
	}
	if staged != nil {
		written, done, err = staged.commit()
		if done {
			content = staged.content
		}
		if done && staged.fallback && err == nil {
			m.streamsNamed.Add(1)
		}
	}
	if !done {
		fill := m.contentFill(r, path, op, repaired, note, content)
		opts := atomicfile.Options{Mode: mode, Perm: 0o644, Tag: r.ID}
		switch {
		case !sameBytes:
		case repaired == nil && len(r.Chain) == 0:
			// The journal's content as it is: hashed as it was appended.
			opts.SHA256 = r.sum.sum(r.Scanner.ContentLen(), r.Scanner.Total)
		case repaired != nil:
			// Hashed when the finalize journaled its record.
			opts.SHA256 = r.PendingSHA256
		}
		written, made, err = m.writeFile(m.fsOf(r), m.workspaceOf(r), path, opts, fill)
	}
	if errors.Is(err, atomicfile.ErrExists) {
		return protocol.FinalizeResult{}, targetExists(path)
	}
	if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		return protocol.FinalizeResult{}, confinedError(r.ID, "writing "+path, err)
	}
	res := protocol.FinalizeResult{
		SessionID:     r.ID,
		Stage:         protocol.StageCompleted,
		TargetFile:    path,
		Operation:     op,
		Bytes:         content.bytes,
		Lines:         content.lines(),
		SHA256:        content.sum(),
		FileBytes:     written.Bytes,
		FileSHA256:    written.SHA256,
		EndMarkerSeen: r.Scanner.MarkerSeen(),
		TrailingBytes: r.Scanner.TrailingLen(),
		Mode:          fmt.Sprintf("%#o", written.Mode.Perm()),
		CreatedDirs:   made,
	}
	if sameBytes {
		res.SHA256 = written.SHA256
	}
	if err != nil {
		// The rename happened; only the directory sync failed.
		res.Warnings = append(res.Warnings, protocol.Warning{Code: "not_durable", Message: err.Error()})
	}
	for _, l := range r.Chain {
		res.ContinuedSessions = append(res.ContinuedSessions, l.ID)
	}
	if res.TrailingBytes > 0 {
		var preview bytes.Buffer
		if _, err := m.cfg.Store.CopyRange(r.ID, &preview, r.Scanner.TrailStart, trailingPreviewBytes); err == nil {
			res.TrailingPreview = strings.ToValidUTF8(preview.String(), "")
		}
	}
	return res, nil
}

// contentFill returns what fills the new file at path: the existing file
// first for append, then the repaired content (or, when nil, the journal),
// then note. What comes from the session also passes through content.
func (m *Manager) contentFill(r *record, path string, op protocol.Operation, repaired []byte, note string, content io.Writer) func(io.Writer) error {
	return func(w io.Writer) error {
		if op == protocol.OpAppend {
			if err := m.copyExisting(r, w, path); err != nil {
				return err
			}
		}
		cw := io.MultiWriter(w, content)
		if repaired != nil {
			_, err := cw.Write(repaired)
			if err == nil && note != "" {
				_, err = io.WriteString(w, note)
			}
			return err
		}
		for _, s := range r.segments() {
			n, err := m.cfg.Store.CopyRange(s.ID, cw, 0, s.Bytes)
			if err != nil {
				return fmt.Errorf("streaming the journal of session %s: %w", s.ID, err)
			}
			if n != s.Bytes {
				return fmt.Errorf("journal of session %s holds %d content bytes, expected %d", s.ID, n, s.Bytes)
			}
		}
		if note != "" {
			_, err := io.WriteString(w, note)
			return err
		}
		return nil
	}
}

// expectationWarnings compares what arrived with what begin announced.
func expectationWarnings(r *record, res protocol.FinalizeResult) []protocol.Warning {
	var ws []protocol.Warning
	if r.ExpectedLines > 0 && res.Lines != r.ExpectedLines {
		ws = append(ws, protocol.Warning{Code: "possible_truncation", Message: fmt.Sprintf(
			"begin announced %d lines but %d arrived; the content may be cut off", r.ExpectedLines, res.Lines)})
	}
	if r.ExpectedBytes > 0 && res.Bytes != r.ExpectedBytes {
		ws = append(ws, protocol.Warning{Code: "possible_truncation", Message: fmt.Sprintf(
			"begin announced %d bytes but %d arrived; the content may be cut off", r.ExpectedBytes, res.Bytes)})
	}
	return ws
}

// counter hashes and counts the bytes written through it (only counts them
// when h is nil).
type counter struct {
	h     hash.Hash
	bytes int64
	nl    int64
	last  byte
}

func newCounter() *counter {
	return &counter{h: sha256.New()}
}

func (c *counter) Write(p []byte) (int, error) {
	c.bytes += int64(len(p))
	c.nl += int64(bytes.Count(p, []byte{'\n'}))
	if len(p) > 0 {
		c.last = p[len(p)-1]
	}
	if c.h == nil {
		return len(p), nil
	}
	return c.h.Write(p)
}

func (c *counter) lines() int64 {
	if c.bytes > 0 && c.last != '\n' {
		return c.nl + 1
	}
	return c.nl
}

func (c *counter) sum() string {
	if c.h == nil {
		return ""
	}
	return hex.EncodeToString(c.h.Sum(nil))
}
