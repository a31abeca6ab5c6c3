package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unsafe"

	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// Write is session.write: it begins a session with p, takes p.Content as
// its only chunk and finalizes it, in one request.
//
// It guarantees what begin, append and finalize guarantee, with fewer
// syncs: the session is never journaled on its own. Its first journaling
// is the finalize's (the record at stage finalizing, the content as chunk
// 1 and the last piece of the backup, written to the content log together
// and synced once, their bbolt index riding a later commit), so a small
// file costs that sync and the file's own two (temp file and directory),
// and its completion rides the next commit, as a finalize's does. A crash after that commit finds a finalizing session with its
// content, which recovery settles as it settles any finalize, and writes
// when the write's temp file proves it never landed (its content is all
// there: no client is left to finalize it); a crash before it leaves
// nothing, and the client, which got no reply, writes again.
//
// Content a check refuses is journaled with the refusal and kept as
// needs_corrections, as a finalize keeps it. A write refused before
// anything was journaled (the target, the content's size or its text)
// leaves no session. Patches and edits, whose finalize may journal other
// records first (transactions, envelopes), journal their content before
// they are applied, as an append would.
func (m *Manager) Write(p protocol.WriteParams) (protocol.FinalizeResult, error) {
	return m.WriteAs("", p)
}

// WriteAs is Write for a client, counted against the caps on sessions as
// BeginAs is.
func (m *Manager) WriteAs(owner string, p protocol.WriteParams) (protocol.FinalizeResult, error) {
	res, err := m.writeAs(owner, p)
	m.logRefused("write refused", owner, err)
	return res, err
}

// logsInfo says whether the logger takes info records: the arguments of one
// are put on the heap before the logger looks at its level, a dozen
// allocations per file at the level a daemon usually runs at (warn).
func (m *Manager) logsInfo() bool {
	return m.cfg.Logger.Enabled(context.Background(), slog.LevelInfo)
}

func (m *Manager) writeAs(owner string, p protocol.WriteParams) (protocol.FinalizeResult, error) {
	if int64(len(p.Content)) > m.cfg.MaxChunkBytes {
		return protocol.FinalizeResult{}, sizeLimit(protocol.ReasonChunkTooLarge, m.cfg.MaxChunkBytes,
			fmt.Sprintf("content of %d bytes (write larger content with session.begin, session.append and session.finalize)", len(p.Content)))
	}
	// One view of the files for the whole request: the target is
	// resolved, read, styled and written with one look for repositories
	// above it and one open of its directory.
	files := m.fs().Scoped()
	defer files.Close()
	r, err := m.prepare(files, true, p.BeginParams, m.cfg.NewID, time.Time{}, "")
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	r.files = files
	adm, err := m.admit(owner)
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	defer adm.release()
	defer m.pruneFinished()
	// The content is read, never written, from here to the journal and
	// the file: a view of the request's string instead of a copy of it.
	// Never nil, even for an empty file: a nil inline content is one
	// journaled already.
	content := []byte{}
	if p.Content != "" {
		content = unsafe.Slice(unsafe.StringData(p.Content), len(p.Content))
	}
	// The file is written while the rest of the request runs, from the
	// content as sent; the finalize takes it if its check leaves the
	// content so (see stageSpeculative). Settled before the view of the
	// files closes, which the defers' order makes so.
	r.early = m.stageSpeculative(&r, r.Operation, content)
	defer r.early.settle()
	r.Scanner.Feed(content)
	r.LastSeq = 1
	r.Stage = protocol.StageStreaming
	r.inline = content
	r.Whole = true
	e := &entry{rec: r, owner: owner}
	e.rec.published = &e.info
	if r.Operation == protocol.OpPatch || r.Operation == protocol.OpEdit {
		if err := m.put(&e.rec); err != nil {
			return protocol.FinalizeResult{}, err
		}
	}
	e.publish()
	// Locked before it can be found: an abort or a finalize by its id
	// (from session.list, a trace) waits for this request's finalize,
	// which would not look at a stage changed under it.
	e.mu.Lock()
	m.mu.Lock()
	m.sessions[r.ID] = e
	adm.settleLocked(e)
	m.mu.Unlock()
	if testHookListed != nil {
		testHookListed(r.ID)
	}
	if m.logsInfo() {
		m.cfg.Logger.Info("session written in one request", "session", r.ID, "target", r.Target, "operation", r.Operation)
	}
	m.traceStage(&e.rec, trace.String("target", r.Target), trace.String("operation", string(r.Operation)), trace.Bool("write", true))

	// The request holds its content already; its check and the target it
	// read take their turn with the finalizes' (see checkBudget).
	held, _ := m.checks.acquire(context.Background(), m.checkWeight(&e.rec))
	res, err := m.finalizeLocked(e, false)
	m.checks.release(held)
	e.rec.files, e.rec.base = nil, nil // the view ends with this request
	if e.rec.early != nil {
		// Refused before its file was taken: let go of it (settle
		// waits for it before the view closes).
		e.rec.early.drop()
		e.rec.early = nil
		if testHookEarly != nil {
			testHookEarly(false)
		}
	}
	journaled := e.rec.inline == nil
	if err != nil && !journaled {
		m.unwatch(e)
		m.mu.Lock()
		delete(m.sessions, r.ID)
		delete(m.caps.live, e)
		m.mu.Unlock()
	} else if err != nil && e.rec.Stage.Open() {
		// Checked but not written (the file could not be): the client
		// has the content and writes again; nothing waits for this one.
		if aerr := m.abortLocked(e); aerr != nil {
			m.cfg.Logger.Error("aborting a failed session.write", "session", r.ID, "err", aerr)
		}
	}
	e.mu.Unlock()
	if journaled && p.Supersedes != "" {
		m.markSuperseded(p.Supersedes, r.ID)
	}
	if err != nil && !journaled {
		// The session never was: an error naming it would send the
		// client looking for it.
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Data.SessionID == r.ID {
			pe.Data.SessionID = ""
		}
	}
	return res, err
}
