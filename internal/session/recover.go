package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// recover brings one loaded session back to a consistent state after the
// daemon stopped, however it stopped. It runs before the socket opens.
func (m *Manager) recover(e *entry) {
	r := &e.rec
	if r.Stage == protocol.StageFinalizing {
		// A crash hit between "finalizing" and "completed": the rename
		// either happened or not. Temp files of that write are garbage
		// either way.
		removed, err := m.cleanTemp(r.Target, r.ID)
		if err != nil {
			m.cfg.Logger.Warn("cleaning temp files of an interrupted finalize", "session", r.ID, "err", err)
		} else if len(removed) > 0 {
			m.cfg.Logger.Info("removed temp files of an interrupted finalize", "session", r.ID, "files", removed)
		}
		if m.landed(r) {
			res, err := m.summaryOfLanded(r)
			if err == nil {
				m.cfg.Logger.Info("completing a finalize the crash interrupted after its rename", "session", r.ID)
				m.complete(e, res)
				return
			}
			m.cfg.Logger.Warn("summarizing a landed finalize", "session", r.ID, "err", err)
		}
		// The rename consumes the temp file: one still there proves the
		// write never landed.
		m.rollBackFinalize(r, len(removed) > 0)
		if r.Whole && len(removed) > 0 && r.Conflict == "" {
			// A session.write: its content is all there, and no client
			// holds its id to finalize it.
			_, err := m.finalizeLocked(e, false)
			if err == nil {
				m.cfg.Logger.Info("wrote a session.write the crash interrupted before its rename", "session", r.ID)
				return
			}
			m.cfg.Logger.Warn("writing a session.write the crash interrupted", "session", r.ID, "err", err)
		}
	}
	if r.acceptsContent() || r.Stage == protocol.StageTruncated {
		m.watch(e)
	}
	m.resetTimers(e)
}

// conflictAfterFinalize is the conflict event recovery records for a
// session whose interrupted finalize left the target holding neither what
// the session began from nor what it was writing.
const conflictAfterFinalize = "changed_around_interrupted_finalize"

// rollBackFinalize reopens a session whose finalize a crash interrupted
// without its content on disk: its chunks are still journaled, so it can be
// finalized again. notRenamed is set when the write's temp file was still
// there, which proves the rename never happened.
//
// A finalize's completion is journaled after its reply (it rides the next
// commit), so the client may have been told the file was written. When the
// target now holds something else than the session began from, the write
// may have landed and been changed since, or an outside write raced it:
// either way, writing again would replace that change, so the session is
// marked in conflict and a finalize refuses (target_changed) unless forced.
// A target that holds what the session began from may be a change too (the
// written file put back by an editor's undo or git), unless the temp file
// proves otherwise: then the daemon does not finalize the session by itself
// (FinalizeInterrupted stops auto-finalize), and a client's finalize, which
// knows whether it had its reply, does. Nothing is lost or overwritten.
func (m *Manager) rollBackFinalize(r *record, notRenamed bool) {
	r.Stage = protocol.StageStreaming
	r.FinalizeInterrupted = !notRenamed
	recovered := "finalize rolled back after a crash"
	if now, err := m.statTarget(m.fs(), r.Target); err == nil && (now.exists != r.BaseExists || now.sha256 != r.BaseSHA256) {
		r.Conflict = conflictAfterFinalize
		recovered = "finalize rolled back after a crash; the target changed"
		m.cfg.Logger.Warn("a finalize the crash interrupted left the target changed: it was written and changed since, "+
			"or changed by another writer; the session's content is kept and a finalize needs force",
			"session", r.ID, "target", r.Target)
	} else if notRenamed {
		m.cfg.Logger.Info("rolling back a finalize the crash interrupted before its rename", "session", r.ID)
	} else {
		m.cfg.Logger.Info("rolling back a finalize the crash interrupted; the target holds what the session began from, "+
			"which may be a revert of its write, so the session waits for a client's finalize", "session", r.ID)
	}
	if err := m.put(r); err != nil {
		m.cfg.Logger.Error("recording a rolled-back finalize", "session", r.ID, "err", err)
	}
	m.traceStage(r, trace.Any("recovered", recovered))
}

// landed reports whether the target holds exactly what this session's
// finalize would have written.
func (m *Manager) landed(r *record) bool {
	if r.PendingSHA256 != "" {
		now, err := m.statTarget(m.fs(), r.Target)
		return err == nil && now.exists && now.sha256 == r.PendingSHA256
	}
	f, err := m.openRegular(m.fs(), r.Target)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	want := r.contentBytes()
	var prefix int64
	if r.Operation == protocol.OpAppend {
		prefix = r.BaseSize
	}
	if fi.Size() != prefix+want {
		return false
	}
	if prefix > 0 {
		h := sha256.New()
		if _, err := io.CopyN(h, f, prefix); err != nil || hex.EncodeToString(h.Sum(nil)) != r.BaseSHA256 {
			return false
		}
	}
	got := sha256.New()
	if _, err := io.Copy(got, f); err != nil {
		return false
	}
	journal := newCounter()
	for _, s := range r.segments() {
		if _, err := m.cfg.Store.CopyRange(s.ID, journal, 0, s.Bytes); err != nil {
			return false
		}
	}
	return journal.sum() == hex.EncodeToString(got.Sum(nil))
}

// summaryOfLanded rebuilds the finalize summary of a write that landed,
// from the file itself: it holds exactly what the session wrote.
func (m *Manager) summaryOfLanded(r *record) (protocol.FinalizeResult, error) {
	f, err := m.openRegular(m.fs(), r.Target)
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	if r.Operation == protocol.OpAppend {
		if _, err := f.Seek(r.BaseSize, io.SeekStart); err != nil {
			return protocol.FinalizeResult{}, err
		}
	}
	content := newCounter()
	if _, err := io.Copy(content, f); err != nil {
		return protocol.FinalizeResult{}, err
	}
	file, err := m.statTarget(m.fs(), r.Target)
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	res := protocol.FinalizeResult{
		SessionID:     r.ID,
		Stage:         protocol.StageCompleted,
		TargetFile:    r.Target,
		Operation:     r.Operation,
		Bytes:         content.bytes,
		Lines:         content.lines(),
		SHA256:        content.sum(),
		FileBytes:     file.size,
		FileSHA256:    file.sha256,
		EndMarkerSeen: r.Scanner.MarkerSeen(),
		TrailingBytes: r.Scanner.TrailingLen(),
		Mode:          fmt.Sprintf("%#o", fi.Mode().Perm()),
	}
	for _, l := range r.Chain {
		res.ContinuedSessions = append(res.ContinuedSessions, l.ID)
	}
	return res, nil
}

// Resume tells a client where a session stands, so after a crash or a
// disconnect it continues from NextSeq without loss or duplication.
func (m *Manager) Resume(id string) (protocol.ResumeResult, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.ResumeResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.rec
	lines := r.contentLines()
	tail := m.tail(r)
	return protocol.ResumeResult{
		SessionID:      r.ID,
		Stage:          r.Stage,
		TargetFile:     r.Target,
		Operation:      r.Operation,
		EndMarker:      r.Scanner.Marker,
		LastSeq:        r.LastSeq,
		NextSeq:        r.LastSeq + 1,
		Bytes:          r.contentBytes(),
		Lines:          lines,
		EndMarkerSeen:  r.Scanner.MarkerSeen(),
		Tail:           tail,
		ContinuePrompt: continuePrompt(r, lines, tail),
	}, nil
}

// Continue opens a session chained to one that ended truncated: its content
// follows the truncated content, and finalizing it writes the whole once.
func (m *Manager) Continue(id string) (protocol.BeginResult, error) {
	return m.continueAs("", id)
}

// continueAs is Continue for a session of owner.
func (m *Manager) continueAs(owner, id string) (protocol.BeginResult, error) {
	e, err := m.lookup(id)
	if err != nil {
		return protocol.BeginResult{}, err
	}
	e.mu.Lock()
	prev := e.rec
	if prev.TxID != "" {
		e.mu.Unlock()
		return protocol.BeginResult{}, txMember(&prev, "a continuation would leave it; abort the transaction and begin a new one")
	}
	if prev.Stage != protocol.StageTruncated {
		e.mu.Unlock()
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonNotTruncated,
			"session %s is %s, not truncated; only a truncated session can be continued", id, prev.Stage)
		pe.Data.SessionID = id
		return protocol.BeginResult{}, pe
	}
	if prev.ContinuedBy != "" {
		e.mu.Unlock()
		pe := protocol.Errorf(protocol.CodeSessionState, protocol.ReasonAlreadyContinued,
			"session %s is already continued by session %s; continue that one", id, prev.ContinuedBy)
		pe.Data.SessionID = prev.ContinuedBy
		return protocol.BeginResult{}, pe
	}
	now := m.cfg.Clock.Now()
	newID := m.cfg.NewID()
	own := prev.segments()
	r := record{
		ID:               newID,
		Intent:           prev.Intent,
		RequestedPath:    prev.RequestedPath,
		WorkspaceRoot:    prev.WorkspaceRoot,
		Workspace:        prev.Workspace,
		Target:           prev.Target,
		Operation:        prev.Operation,
		Stage:            protocol.StageAwaitingContent,
		Scanner:          NewScanner(EndMarker(newID)),
		BaseExists:       prev.BaseExists,
		BaseSize:         prev.BaseSize,
		BaseSHA256:       prev.BaseSHA256,
		BaseKey:          prev.BaseKey,
		BasePieces:       prev.BasePieces,
		IdleMS:           prev.IdleMS,
		AutoFinalizeMS:   prev.AutoFinalizeMS,
		ExpectedLines:    prev.ExpectedLines,
		ExpectedBytes:    prev.ExpectedBytes,
		TruncationPolicy: prev.TruncationPolicy,
		Chain:            own,
		ContinuesSession: id,
		Conflict:         prev.Conflict,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	e.rec.ContinuedBy = newID
	e.rec.UpdatedAt = now
	if err := m.put(&e.rec); err != nil {
		e.rec.ContinuedBy = ""
		e.mu.Unlock()
		return protocol.BeginResult{}, err
	}
	m.unwatch(e)
	e.mu.Unlock()
	res, err := m.open(&r, owner, prev.RequestedPath)
	if err != nil {
		return res, err
	}
	res.Instructions = continuePrompt(&r, prev.contentLines(), m.tail(&prev))
	return res, nil
}

// tail returns the last lines of a session's (chained) content.
func (m *Manager) tail(r *record) string {
	var buf bytes.Buffer
	segs := r.segments()
	// Walk back over the segments until tailBytes are collected.
	need := int64(tailBytes)
	var parts [][]byte
	for i := len(segs) - 1; i >= 0 && need > 0; i-- {
		s := segs[i]
		off := max(0, s.Bytes-need)
		var part bytes.Buffer
		if _, err := m.cfg.Store.CopyRange(s.ID, &part, off, s.Bytes-off); err != nil {
			break
		}
		parts = append(parts, part.Bytes())
		need -= s.Bytes - off
	}
	for i := len(parts) - 1; i >= 0; i-- {
		buf.Write(parts[i])
	}
	text := strings.ToValidUTF8(buf.String(), "")
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	} else if need <= 0 && len(lines) > 1 {
		// The first line was cut by the byte window; drop the fragment.
		lines = lines[1:]
	}
	return strings.Join(lines, "")
}

// catchUp brings a loaded session's counts up to the chunks it holds: the
// appends journaled after its record carried no record of their own (see
// recordDue), so its last seq and scanner are read back from those chunks,
// in order, up to the first missing (or damaged) one, which the client
// sends again. At most recordEvery chunks or recordEveryBytes are read.
func (m *Manager) catchUp(e *entry) {
	r := &e.rec
	if !r.acceptsContent() {
		return
	}
	r.recordedSeq, r.recordedBytes = r.LastSeq, r.Scanner.Total
	fed := false
	for seq := r.LastSeq + 1; ; seq++ {
		chunk, err := m.cfg.Store.Chunk(r.ID, seq)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			m.cfg.Logger.Error("reading back a chunk appended after the session's record; the client sends it again",
				"session", r.ID, "seq", seq, "err", err)
			break
		}
		r.Scanner.Feed(chunk)
		r.LastSeq = seq
		r.Stage = protocol.StageStreaming
		fed = true
	}
	if fed {
		// When the last of them came is not kept; the restart is the
		// latest it can have been, which keeps the session from expiring
		// early.
		r.UpdatedAt = m.cfg.Clock.Now()
		e.publish()
	}
}
