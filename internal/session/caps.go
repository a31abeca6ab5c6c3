package session

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Caps on unfinished sessions (open, truncated, needing corrections): each
// one holds its record in memory (its intent, paths and scanner) and in
// the store's mapped pages, and its acknowledged content in the store,
// until it is finished or expires after the retention period. Measured:
// 40,000 sessions with 4 KiB intents took the daemon to 782 MiB RSS, about
// 20 KiB each.
const (
	// DefaultMaxSessions bounds a daemon's unfinished sessions: ~80 MiB at
	// 20 KiB each, far more than any set of agents on one machine drives
	// at once (a transaction of MaxTxFiles is 256).
	DefaultMaxSessions = 4096
	// DefaultMaxClientSessions bounds one client's (one peer process's):
	// a quarter of the daemon's, so a client in a loop leaves room for the
	// others, and still four full transactions.
	DefaultMaxClientSessions = 1024
)

// sessionCaps tracks the unfinished sessions for the caps. Guarded by
// Manager.mu.
type sessionCaps struct {
	// live holds every entry that was unfinished when last looked at;
	// admit drops the ones that finished since.
	live map[*entry]struct{}
	// pending counts sessions admitted and not yet in live, in total and
	// per owner.
	pending        int
	pendingByOwner map[string]int
}

// BeginAs is Begin for a session driven by owner (the daemon names the
// client's process), counted against MaxClientSessions.
func (m *Manager) BeginAs(owner string, p protocol.BeginParams) (protocol.BeginResult, error) {
	res, err := m.beginAs(owner, p, m.cfg.NewID, time.Time{}, "")
	m.logRefused("begin refused", owner, err)
	return res, err
}

// ContinueAs is Continue for a client, counted as BeginAs is.
func (m *Manager) ContinueAs(owner, id string) (protocol.BeginResult, error) {
	return m.continueAs(owner, id)
}

// TxBeginAs is TxBegin for a client, counted as BeginAs is: the whole
// transaction must fit.
func (m *Manager) TxBeginAs(owner string, p protocol.TxBeginParams) (protocol.TxBeginResult, error) {
	if err := m.fits(owner, len(p.Files)); err != nil {
		m.logRefused("transaction refused", owner, err)
		return protocol.TxBeginResult{}, err
	}
	res, err := m.txBeginAs(owner, p)
	m.logRefused("transaction refused", owner, err)
	return res, err
}

// countLocked drops entries that finished from live and counts the rest,
// in total and for owner. m.mu is held.
func (m *Manager) countLocked(owner string) (total, mine int) {
	for e := range m.caps.live {
		if !e.snapshot().Stage.Unfinished() {
			delete(m.caps.live, e)
			continue
		}
		total++
		if owner != "" && e.owner == owner {
			mine++
		}
	}
	return total + m.caps.pending, mine + m.caps.pendingByOwner[owner]
}

// fits reports whether n more sessions of owner fit the caps now.
func (m *Manager) fits(owner string, n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	total, mine := m.countLocked(owner)
	return m.capError(owner, total+n, mine+n)
}

func (m *Manager) capError(owner string, total, mine int) error {
	if total > m.cfg.MaxSessions {
		e := protocol.Errorf(protocol.CodeTooManySessions, protocol.ReasonTooManySessions,
			"oriond holds its limit of %d unfinished sessions (--max-sessions); finalize or abort open sessions (orionctl sessions list), or wait for idle ones to expire",
			m.cfg.MaxSessions)
		e.Data.Limit = int64(m.cfg.MaxSessions)
		return e
	}
	if owner != "" && mine > m.cfg.MaxClientSessions {
		e := protocol.Errorf(protocol.CodeTooManySessions, protocol.ReasonTooManySessions,
			"this client (%s) holds its limit of %d unfinished sessions (--max-client-sessions); finalize or abort the ones it opened",
			owner, m.cfg.MaxClientSessions)
		e.Data.Limit = int64(m.cfg.MaxClientSessions)
		return e
	}
	return nil
}

// admission is one session counted as pending by admit until it is
// either in live (settleLocked) or not opened (release).
type admission struct {
	m       *Manager
	owner   string
	settled bool
}

// admit counts one session of owner as pending if it fits the caps.
func (m *Manager) admit(owner string) (*admission, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	total, mine := m.countLocked(owner)
	if err := m.capError(owner, total+1, mine+1); err != nil {
		return nil, err
	}
	m.caps.pending++
	m.caps.pendingByOwner[owner]++
	return &admission{m: m, owner: owner}, nil
}

// settleLocked moves the admitted session e from pending to live in one
// step under m.mu (held), so that it is never counted twice: a count
// between the two, as a deferred release allowed, refused a session one
// short of the cap.
func (a *admission) settleLocked(e *entry) {
	a.m.caps.live[e] = struct{}{}
	a.unpendLocked()
	a.settled = true
}

// release takes the pending count back when the session was not opened;
// after settleLocked it does nothing.
func (a *admission) release() {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	if !a.settled {
		a.unpendLocked()
		a.settled = true
	}
}

func (a *admission) unpendLocked() {
	a.m.caps.pending--
	if a.m.caps.pendingByOwner[a.owner]--; a.m.caps.pendingByOwner[a.owner] <= 0 {
		delete(a.m.caps.pendingByOwner, a.owner)
	}
}

// ListPage is one page of session.list: the sessions List(p.All) returns,
// from p.Cursor on, at most p.Limit of them and at most
// protocol.MaxListReplyBytes as encoded, with the cursor of the next page
// when more follow. Every session is looked at to build a page, tens of
// thousands of them at the caps: it stops, with ctx's error, once ctx is
// done.
func (m *Manager) ListPage(ctx context.Context, p protocol.ListParams) (protocol.ListResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = protocol.DefaultListLimit
	}
	limit = min(limit, protocol.MaxListLimit)
	var after *listKey
	if p.Cursor != "" {
		k, err := parseCursor(p.Cursor)
		if err != nil {
			return protocol.ListResult{}, err
		}
		after = &k
	}
	infos, err := m.list(ctx, p.All)
	if err != nil {
		return protocol.ListResult{}, err
	}
	// The cursor is in listKey order; List's is the same but for times
	// equal in wall clock and not in monotonic reading.
	sort.SliceStable(infos, func(i, j int) bool { return keyOf(&infos[i]).before(keyOf(&infos[j])) })
	start := 0
	if after != nil {
		start = sort.Search(len(infos), func(i int) bool { return after.before(keyOf(&infos[i])) })
	}
	res := protocol.ListResult{Sessions: []protocol.SessionInfo{}}
	size := 0
	for i := start; i < len(infos); i++ {
		if len(res.Sessions) == limit {
			res.NextCursor = keyOf(&res.Sessions[len(res.Sessions)-1]).String()
			break
		}
		if i%listCheckEvery == 0 {
			if err := readOn(ctx, "session.list.page"); err != nil {
				return protocol.ListResult{}, err
			}
		}
		b, err := json.Marshal(&infos[i])
		if err != nil {
			return protocol.ListResult{}, ioError(infos[i].SessionID, "encoding a session", err)
		}
		if size += len(b) + 1; size > protocol.MaxListReplyBytes && len(res.Sessions) > 0 {
			res.NextCursor = keyOf(&res.Sessions[len(res.Sessions)-1]).String()
			break
		}
		res.Sessions = append(res.Sessions, infos[i])
	}
	return res, nil
}

// listKey is a session's place in List's order: created, then id.
type listKey struct {
	created int64
	id      string
}

func keyOf(s *protocol.SessionInfo) listKey {
	return listKey{created: s.CreatedAt.UnixNano(), id: s.SessionID}
}

// before reports whether k sorts before o.
func (k listKey) before(o listKey) bool {
	if k.created != o.created {
		return k.created < o.created
	}
	return k.id < o.id
}

// String is the cursor naming the page after k: opaque to clients.
func (k listKey) String() string { return strconv.FormatInt(k.created, 36) + "." + k.id }

func parseCursor(c string) (listKey, error) {
	created, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(created, 36, 64)
	if !ok || err != nil || id == "" {
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMalformedParams,
			"cursor %q is not one session.list gave; pass next_cursor as it came, or no cursor for the first page", truncate(c, 64))
		e.Data.Field = "cursor"
		return listKey{}, e
	}
	return listKey{created: n, id: id}, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Caps are the caps on sessions in force.
type Caps struct {
	MaxSessions, MaxClientSessions int
}

// Caps returns the caps on sessions in force.
func (m *Manager) Caps() Caps {
	return Caps{MaxSessions: m.cfg.MaxSessions, MaxClientSessions: m.cfg.MaxClientSessions}
}

// DefaultMaxFinishedSessions bounds the finished sessions (completed,
// aborted, expired) whose summaries are kept for the summary retention:
// each keeps its record in memory and, for undo, its backup in the store.
// A client that begins and aborts sessions in a loop would otherwise grow
// the daemon for a day; past the cap the oldest are forgotten first.
const DefaultMaxFinishedSessions = 10000

// pruneFinished forgets the oldest finished sessions while there are more
// than MaxFinishedSessions, down to 90% of it so that the sort is paid
// once per many sessions, not once per begin.
func (m *Manager) pruneFinished() {
	m.mu.Lock()
	over := len(m.sessions)-len(m.caps.live) > m.cfg.MaxFinishedSessions
	var done []*entry
	if over {
		for _, e := range m.sessions {
			if e.snapshot().Stage.Finished() {
				done = append(done, e)
			}
		}
	}
	m.mu.Unlock()
	if len(done) <= m.cfg.MaxFinishedSessions {
		return
	}
	sort.Slice(done, func(i, j int) bool {
		return done[i].snapshot().UpdatedAt.Before(done[j].snapshot().UpdatedAt)
	})
	drop := done[:len(done)-m.cfg.MaxFinishedSessions*9/10]
	for _, e := range drop {
		id := e.snapshot().SessionID
		if err := m.forget(id); err != nil {
			m.cfg.Logger.Warn("pruning a finished session", "session", id, "err", err)
		}
	}
	m.cfg.Logger.Info("pruned the oldest finished sessions: more than --max-finished-sessions were kept",
		"pruned", len(drop), "max_finished_sessions", m.cfg.MaxFinishedSessions)
	m.pruneTxs()
}
