package session

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// tailBytes bounds how much of the content's end is read for the lines a
// continuation prompt quotes; tailLines is how many lines it quotes.
const (
	tailBytes = 2048
	tailLines = 5
)

func (m *Manager) idleTimeout(r *record) time.Duration {
	if r.IdleMS > 0 {
		return sessionTimeout(r.IdleMS)
	}
	return m.cfg.IdleTimeout
}

func (m *Manager) autoFinalizeTimeout(r *record) time.Duration {
	if r.AutoFinalizeMS > 0 {
		return sessionTimeout(r.AutoFinalizeMS)
	}
	return m.cfg.AutoFinalize
}

// sessionTimeout converts a session's own timeout. Begin refuses values
// over the maximum, but a record journaled before it did may hold one, and
// multiplied unclamped it would overflow into a timer of a few
// milliseconds.
func sessionTimeout(ms int64) time.Duration {
	return time.Duration(min(ms, protocol.MaxSessionTimeoutMS)) * time.Millisecond
}

// resetTimers restarts the idle and auto-finalize timers of a session that
// accepts content; e.mu must be held.
func (m *Manager) resetTimers(e *entry) {
	if !e.rec.acceptsContent() {
		m.stopTimers(e)
		return
	}
	// Every append resets both: the timers are rescheduled, not made
	// anew, which cost four allocations per append.
	id := e.rec.ID
	if e.idle != nil {
		e.idle.Reset(m.idleTimeout(&e.rec))
	} else {
		e.idle = m.cfg.Clock.AfterFunc(m.idleTimeout(&e.rec), func() { m.onIdle(e, id) })
	}
	if e.auto != nil {
		e.auto.Reset(m.autoFinalizeTimeout(&e.rec))
	} else {
		e.auto = m.cfg.Clock.AfterFunc(m.autoFinalizeTimeout(&e.rec), func() { m.onAutoFinalize(e, id) })
	}
}

func (m *Manager) stopTimers(e *entry) {
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	if e.auto != nil {
		e.auto.Stop()
		e.auto = nil
	}
}

// onIdle prompts the model, through its client, to finish or continue.
func (m *Manager) onIdle(e *entry, id string) {
	e.mu.Lock()
	r := &e.rec
	if !r.acceptsContent() || r.Scanner.MarkerSeen() {
		e.mu.Unlock()
		return
	}
	n := protocol.IdleNotification{
		SessionID: id,
		IdleMS:    m.idleTimeout(r).Milliseconds(),
		EndMarker: r.Scanner.Marker,
		Prompt:    protocol.Fill(protocol.PromptIdle, "target", displayName(r), "marker", r.Scanner.Marker),
	}
	e.mu.Unlock()
	m.cfg.Logger.Info("session idle", "session", id)
	m.cfg.Notify(id, protocol.NotifySessionIdle, n)
}

// onAutoFinalize ends a session nobody finalized: with its marker it is
// written as usual; without, it ends truncated and its content is kept.
func (m *Manager) onAutoFinalize(e *entry, id string) {
	e.mu.Lock()
	r := &e.rec
	if !r.acceptsContent() || r.FinalizeInterrupted {
		e.mu.Unlock()
		return
	}
	if r.Scanner.MarkerSeen() && r.TxID != "" {
		// A transaction's file is written by tx.commit, with the others.
		e.mu.Unlock()
		return
	}
	if r.Scanner.MarkerSeen() {
		_, err := m.finalizeLocked(e, false)
		e.mu.Unlock()
		if err != nil {
			m.cfg.Logger.Warn("auto-finalize failed; the session stays open", "session", id, "err", err)
		}
		return
	}
	tc, err := m.truncateLocked(e)
	e.mu.Unlock()
	if err != nil {
		m.cfg.Logger.Error("ending a session as truncated", "session", id, "err", err)
		return
	}
	m.cfg.Logger.Info("session truncated", "session", id, "lines", tc.Lines, "bytes", tc.Bytes)
	m.cfg.Notify(id, protocol.NotifySessionTruncated, tc)
}

// truncateLocked ends a session without its marker. The content stays
// journaled and continuable; the policy may also write it somewhere.
func (m *Manager) truncateLocked(e *entry) (protocol.TruncationContext, error) {
	r := &e.rec
	tc := m.truncationContext(r)
	policy := r.TruncationPolicy
	if policy == "" {
		policy = m.cfg.TruncationPolicy
	}
	if r.TxID != "" {
		// Writing one file of a transaction alone would break all or none.
		policy = protocol.TruncationKeep
	}
	switch policy {
	case protocol.TruncationIncompleteFile:
		path := r.Target + ".incomplete"
		if _, err := m.write(r, path, protocol.OpOverwrite, ""); err != nil {
			m.cfg.Logger.Warn("writing the .incomplete sibling", "session", r.ID, "err", err)
		} else {
			tc.IncompleteFile = path
		}
	case protocol.TruncationWriteWithNote:
		note := fmt.Sprintf("\n[oriond: content cut off after line %d; session %s]\n", tc.Lines, r.ID)
		m.unwatch(e)
		if _, err := m.write(r, r.Target, r.Operation, note); err != nil {
			m.cfg.Logger.Warn("writing truncated content with a note", "session", r.ID, "err", err)
		}
	}
	r.Stage = protocol.StageTruncated
	r.Truncation = &tc
	m.dropStream(e)
	r.UpdatedAt = m.cfg.Clock.Now()
	m.stopTimers(e)
	m.traceStage(r, trace.Any("policy", policy), trace.Any("incomplete_file", tc.IncompleteFile), trace.Any("continue_prompt", tc.ContinuePrompt))
	if policy != protocol.TruncationWriteWithNote {
		// Keep watching: a continuation will write this target.
		m.watch(e)
	}
	return tc, m.put(r)
}

// truncationContext says where a session's content stops and what to tell
// the model to continue it.
func (m *Manager) truncationContext(r *record) protocol.TruncationContext {
	lines := r.contentLines()
	tail := m.tail(r)
	return protocol.TruncationContext{
		SessionID:      r.ID,
		TargetFile:     r.Target,
		Lines:          lines,
		Bytes:          r.contentBytes(),
		Tail:           tail,
		ContinuePrompt: continuePrompt(r, lines, tail),
	}
}

// continuePrompt is the exact sentence a model needs to continue a file.
func continuePrompt(r *record, lines int64, tail string) string {
	where := protocol.Fill(protocol.PromptContinueFrom, "line", strconv.FormatInt(lines+1, 10))
	if n := len(tail); n > 0 && tail[n-1] != '\n' {
		where = protocol.Fill(protocol.PromptContinueMiddle, "line", strconv.FormatInt(lines, 10))
	}
	quoted := protocol.PromptContinueNoTail
	if tail != "" {
		quoted = protocol.PromptContinueTail + tail
		if tail[len(tail)-1] != '\n' {
			quoted += "\n"
		}
	}
	return protocol.Fill(protocol.PromptContinue, "target", displayName(r), "where", where, "tail", quoted, "marker", r.Scanner.Marker)
}

// displayName is the target as the model named it, or its base name.
func displayName(r *record) string {
	if r.RequestedPath != "" {
		return r.RequestedPath
	}
	return filepath.Base(r.Target)
}

// watch registers the session's target with the watcher; e.mu held.
func (m *Manager) watch(e *entry) {
	if m.cfg.Watcher == nil || e.watching {
		return
	}
	if err := m.cfg.Watcher.Add(e.rec.Target); err != nil {
		m.cfg.Logger.Warn("watching the target; changes are still caught by hash at finalize",
			"session", e.rec.ID, "target", e.rec.Target, "err", err)
		return
	}
	e.watching = true
}

func (m *Manager) unwatch(e *entry) {
	if m.cfg.Watcher == nil || !e.watching {
		return
	}
	m.cfg.Watcher.Remove(e.rec.Target)
	e.watching = false
}

// TargetChanged records an external change to path (kind: write, create,
// rename, remove, rescan) against every session watching it, and notifies
// their clients. Every event is checked against the file itself: only a
// target that no longer holds what the session began from is a conflict.
func (m *Manager) TargetChanged(path, kind string) {
	m.mu.Lock()
	entries := m.entries()
	m.mu.Unlock()
	// The target is read before any session lock is taken: reading may be
	// slow (a large file) and a session's lock is what finalize, status
	// and listings wait on.
	var now targetState
	read := false
	for _, e := range entries {
		if info := e.snapshot(); info.TargetFile != path || info.Conflict != "" {
			continue
		}
		if !read {
			var err error
			if now, err = m.statTarget(m.fs(), path); err != nil {
				// Something unreadable now stands at the target (a FIFO,
				// a symlink): that is a change too.
				now = targetState{exists: true, sha256: "unreadable: " + err.Error()}
			}
			read = true
		}
		e.mu.Lock()
		r := &e.rec
		watched := r.acceptsContent() || r.Stage == protocol.StageTruncated
		if !watched || r.Target != path || r.Conflict != "" {
			e.mu.Unlock()
			continue
		}
		// An event can arrive late: the rename of a finalize that ended
		// just before this session began, or a roll-back restoring the
		// file. A target that still holds what the session began from has
		// lost nothing, so only a real difference is a conflict.
		if now.exists == r.BaseExists && now.sha256 == r.BaseSHA256 {
			e.mu.Unlock()
			continue
		}
		if now.exists && r.BaseExists && r.BasePieces > 0 {
			// Line endings alone are no change either (finalize reads it
			// so too); comparing reads the file and the content at begin,
			// so the lock is let go meanwhile.
			probe := record{Target: r.Target, BaseKey: r.BaseKey, BasePieces: r.BasePieces, BaseSHA256: r.BaseSHA256, pendingBase: r.pendingBase}
			e.mu.Unlock()
			if m.sameText(&probe, now) {
				continue
			}
			e.mu.Lock()
			if r.Conflict != "" || !(r.acceptsContent() || r.Stage == protocol.StageTruncated) {
				e.mu.Unlock()
				continue
			}
		}
		r.Conflict = kind
		r.UpdatedAt = m.cfg.Clock.Now()
		if err := m.put(r); err != nil {
			m.cfg.Logger.Warn("recording a conflict", "session", r.ID, "err", err)
		}
		n := protocol.ConflictNotification{SessionID: r.ID, TargetFile: path, Event: kind}
		m.cfg.Trace.Record(trace.Event{Time: r.UpdatedAt, Type: protocol.TraceConflict, SessionID: r.ID,
			Fields: map[string]any{"target": path, "event": kind}})
		over := r.Stage == protocol.StageTruncated
		e.mu.Unlock()
		if over {
			// A truncated session is over until it is continued: the change
			// is recorded for a continuation to find, and is no warning.
			m.cfg.Logger.Debug("target changed after the session ended truncated", "session", n.SessionID, "target", path, "event", kind)
			continue
		}
		m.cfg.Logger.Warn("target changed during the session", "session", n.SessionID, "target", path, "event", kind)
		m.cfg.Notify(n.SessionID, protocol.NotifySessionConflict, n)
	}
}
