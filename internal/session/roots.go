package session

import (
	"errors"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/protocol"
)

// access is the guard that decides which paths may be written and the
// descriptors of its roots that every write goes through: one value, so
// a request never checks with one set of roots and writes with another.
type access struct {
	guard *pathguard.Guard
	files *confine.FS
}

func (m *Manager) guard() *pathguard.Guard { return m.roots.Load().guard }

func (m *Manager) fs() *confine.FS { return m.roots.Load().files }

// Guard is the guard in force.
func (m *Manager) Guard() *pathguard.Guard { return m.guard() }

// SetGuard puts g in force for every request that starts after it
// returns; a request already running finishes with the guard it started
// with. g must keep every root of the guard in force (roots are only
// added while the daemon runs), so a session begun under the old roots
// can still be written: the descriptors of those roots are shared, and
// only the new roots are opened.
func (m *Manager) SetGuard(g *pathguard.Guard) error {
	m.rootsMu.Lock()
	defer m.rootsMu.Unlock()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return errors.New("session: the manager is closed")
	}
	cur := m.roots.Load()
	files, err := cur.files.Extend(g)
	if err != nil {
		return err
	}
	m.roots.Store(&access{guard: g, files: files})
	return nil
}

// logRefused logs a refusal of what a client asked: its reason and the
// fields the daemon set (a resolved path, a rule, a session it knows),
// never the client's own strings, such as an intent or a session id it
// made up.
func (m *Manager) logRefused(msg, owner string, err error) {
	if err == nil {
		return
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		m.cfg.Logger.Warn(msg, "client", owner, "err", err)
		return
	}
	args := []any{"reason", pe.Data.Reason, "code", pe.Code}
	if owner != "" {
		args = append(args, "client", owner)
	}
	if pe.Data.Path != "" {
		args = append(args, "path", pe.Data.Path)
	}
	if pe.Data.Rule != "" {
		args = append(args, "rule", pe.Data.Rule)
	}
	if pe.Data.SessionID != "" && pe.Data.Reason != protocol.ReasonSessionNotFound {
		args = append(args, "session", pe.Data.SessionID)
	}
	if pe.Data.TxID != "" {
		args = append(args, "tx", pe.Data.TxID)
	}
	m.cfg.Logger.Warn(msg, args...)
}
