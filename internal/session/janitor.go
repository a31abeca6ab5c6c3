package session

import (
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Defaults for the retention periods.
const (
	DefaultRetention        = time.Hour
	DefaultSummaryRetention = 24 * time.Hour
	// sweepInterval is how often the janitor looks for expired sessions;
	// retention is counted in hours, so a minute of slack is invisible.
	sweepInterval = time.Minute
)

// startJanitor schedules the periodic sweep.
func (m *Manager) startJanitor() {
	m.cfg.Clock.AfterFunc(sweepInterval, func() {
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return
		}
		res := m.Clean(m.cfg.Retention, m.cfg.SummaryRetention)
		if len(res.Expired)+len(res.Pruned) > 0 {
			m.cfg.Logger.Info("swept sessions", "expired", len(res.Expired), "pruned", len(res.Pruned))
		}
		m.startJanitor()
	})
}

// Clean expires unfinished sessions idle for longer than retention and
// forgets finished ones older than summaryRetention. Zero durations take
// the configured ones.
func (m *Manager) Clean(retention, summaryRetention time.Duration) protocol.CleanResult {
	if retention <= 0 {
		retention = m.cfg.Retention
	}
	if summaryRetention <= 0 {
		summaryRetention = m.cfg.SummaryRetention
	}
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	entries := m.entries()
	m.mu.Unlock()
	res := protocol.CleanResult{Expired: []string{}, Pruned: []string{}}
	for _, e := range entries {
		e.mu.Lock()
		r := &e.rec
		age := now.Sub(r.UpdatedAt)
		switch {
		case r.Stage.Unfinished() && r.ContinuedBy == "" && age > m.expiresAfter(r, retention):
			m.expireLocked(e)
			res.Expired = append(res.Expired, r.ID)
		case r.Stage.Finished() && age > summaryRetention:
			e.mu.Unlock()
			if err := m.forget(r.ID); err != nil {
				m.cfg.Logger.Warn("pruning a session", "session", r.ID, "err", err)
				continue
			}
			res.Pruned = append(res.Pruned, r.ID)
			continue
		}
		e.mu.Unlock()
	}
	m.pruneTxs()
	// Expiring a continuation releases the truncated sessions it chained;
	// they expire with it.
	for _, id := range res.Expired {
		e, err := m.lookup(id)
		if err != nil {
			continue
		}
		e.mu.Lock()
		chain := append([]link(nil), e.rec.Chain...)
		e.mu.Unlock()
		for _, l := range chain {
			if pe, err := m.lookup(l.ID); err == nil {
				pe.mu.Lock()
				if pe.rec.Stage.Unfinished() {
					m.expireLocked(pe)
					res.Expired = append(res.Expired, l.ID)
				}
				pe.mu.Unlock()
			}
		}
	}
	return res
}

// pruneTxs forgets transactions none of whose sessions is left.
func (m *Manager) pruneTxs() {
	m.mu.Lock()
	var gone []string
	for id, te := range m.txs {
		left := false
		for _, sid := range te.rec.Sessions {
			if _, ok := m.sessions[sid]; ok {
				left = true
			}
		}
		if !left {
			gone = append(gone, id)
			delete(m.txs, id)
		}
	}
	m.mu.Unlock()
	for _, id := range gone {
		m.dropTx(id)
	}
}

func (m *Manager) expireLocked(e *entry) {
	r := &e.rec
	m.stopTimers(e)
	m.unwatch(e)
	r.Stage = protocol.StageExpired
	r.UpdatedAt = m.cfg.Clock.Now()
	m.dropStream(e)
	base := m.releaseBase(r)
	if err := m.putFinished(r); err != nil {
		m.cfg.Logger.Warn("expiring a session", "session", r.ID, "err", err)
		return
	}
	base()
	m.cfg.Logger.Info("session expired", "session", r.ID)
	m.traceStage(r)
}

// expiresAfter is how long an unfinished session may sit untouched: the
// retention, or longer for a session still waiting out its own
// auto-finalize period, which must end it (written or truncated), not an
// expiry that drops its content first.
func (m *Manager) expiresAfter(r *record, retention time.Duration) time.Duration {
	if r.acceptsContent() {
		return max(retention, m.autoFinalizeTimeout(r))
	}
	return retention
}
