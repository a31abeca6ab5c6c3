package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// refreshEvery is how often the hub asks the daemon about sessions that
// trace events said changed: never more than once a second, however busy
// the daemon is.
const refreshEvery = time.Second

// pollWithoutTrace is how often the whole list is read from a daemon that
// does not trace (and so sends no events to follow).
const pollWithoutTrace = 3 * time.Second

// maxRefresh bounds the session.get calls of one refresh; past it the hub
// lists every session instead.
const maxRefresh = 200

// Row is one session as the page lists it: the daemon's info and what the
// page derives from it.
type Row struct {
	protocol.SessionInfo
	// State is the stage, or "conflict" for an open session whose target
	// changed on disk, "undone" for a completed session taken back, or
	// "dry_run" for one that ended after a dry run (the daemon records it
	// aborted; orionctl sessions list says "dry run").
	State string `json:"state"`
	// Rate is bytes per second while streaming, measured between two
	// refreshes; 0 otherwise.
	Rate float64 `json:"rate,omitempty"`

	sampleBytes int64
	sampleAt    time.Time
}

func stateOf(s protocol.SessionInfo) string {
	switch {
	case s.Undone:
		return "undone"
	case s.Conflict != "" && s.Stage.Open():
		return "conflict"
	case s.DryRun && s.Stage == protocol.StageAborted:
		return "dry_run"
	}
	return string(s.Stage)
}

// hub keeps the sessions of one daemon connection up to date from its
// trace events, reconnecting when the daemon goes away, and tells the
// page's event streams when something changed.
type hub struct {
	socket string
	log    *slog.Logger
	now    func() time.Time

	mu        sync.Mutex
	c         *client.Client
	connected bool
	lastErr   string
	sessions  map[string]*Row
	dirty     map[string]bool
	version   uint64
	changed   []string
	subs      map[chan struct{}]struct{}
}

func newHub(socket string, log *slog.Logger) *hub {
	return &hub{socket: socket, log: log, now: time.Now, sessions: map[string]*Row{},
		dirty: map[string]bool{}, subs: map[chan struct{}]struct{}{}}
}

// run connects, and reconnects once a second while the daemon is away,
// until ctx ends.
func (h *hub) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := h.session(ctx); err != nil && ctx.Err() == nil {
			h.setDown(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(refreshEvery):
		}
	}
}

// session serves one daemon connection until it ends.
func (h *hub) session(ctx context.Context) error {
	c, err := client.Dial(ctx, h.socket, client.Options{OnNotification: h.notified})
	if err != nil {
		return err
	}
	defer c.Close()
	var followed protocol.TraceFollowResult
	err = c.Call(ctx, protocol.MethodTraceFollow, protocol.TraceFollowParams{}, &followed)
	var pe *protocol.Error
	if errors.As(err, &pe) {
		// A daemon run with --trace=false: no events to follow, so the
		// list is read whole every pollWithoutTrace instead.
		h.log.Warn("oriond does not trace; the list is refreshed every few seconds", "err", pe.Message)
	} else if err != nil {
		return err
	}
	list, err := c.List(ctx, true)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.c, h.connected, h.lastErr = c, true, ""
	h.replaceLocked(list)
	h.mu.Unlock()
	h.log.Info("connected to oriond", "socket", h.socket, "sessions", len(list))
	t := time.NewTicker(refreshEvery)
	defer t.Stop()
	ticks := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.Done():
			return errors.New("the daemon closed the connection")
		case <-t.C:
			ticks++
			if !followed.Following && ticks%int(pollWithoutTrace/refreshEvery) == 0 {
				list, err := c.List(ctx, true)
				if err != nil {
					return err
				}
				h.mu.Lock()
				h.replaceLocked(list)
				h.mu.Unlock()
			}
			if err := h.refresh(ctx, c); err != nil {
				return err
			}
		}
	}
}

func (h *hub) setDown(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.connected
	h.c, h.connected, h.lastErr = nil, false, err.Error()
	if was {
		h.log.Warn("lost oriond; reconnecting", "socket", h.socket, "err", err, "start_with", client.StartCommand(h.socket))
		h.bumpLocked(nil)
	}
}

// notified runs on the connection's read loop: it only notes which
// sessions to ask about at the next refresh.
func (h *hub) notified(method string, params json.RawMessage) {
	if method != protocol.NotifyTraceEvent {
		return
	}
	var n protocol.TraceEventNotification
	if json.Unmarshal(params, &n) != nil || n.Event.SessionID == "" {
		return
	}
	h.mu.Lock()
	if len(h.dirty) <= maxRefresh {
		h.dirty[n.Event.SessionID] = true
	}
	h.mu.Unlock()
}

// refresh asks the daemon about the sessions that changed since the last
// one: each by session.get, or all by session.list when many did.
func (h *hub) refresh(ctx context.Context, c *client.Client) error {
	h.mu.Lock()
	ids := make([]string, 0, len(h.dirty))
	for id := range h.dirty {
		ids = append(ids, id)
	}
	clear(h.dirty)
	h.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	if len(ids) > maxRefresh {
		list, err := c.List(ctx, true)
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.replaceLocked(list)
		h.mu.Unlock()
		return nil
	}
	infos := make([]protocol.SessionInfo, 0, len(ids))
	for _, id := range ids {
		info, err := c.Get(ctx, id)
		var pe *protocol.Error
		if errors.As(err, &pe) {
			continue // pruned meanwhile
		}
		if err != nil {
			return err
		}
		infos = append(infos, info)
	}
	h.mu.Lock()
	for _, info := range infos {
		h.putLocked(info)
	}
	h.bumpLocked(ids)
	h.mu.Unlock()
	return nil
}

func (h *hub) replaceLocked(list []protocol.SessionInfo) {
	old := h.sessions
	h.sessions = make(map[string]*Row, len(list))
	for _, s := range list {
		if r, ok := old[s.SessionID]; ok {
			h.sessions[s.SessionID] = r
		}
		h.putLocked(s)
	}
	h.bumpLocked(nil)
}

func (h *hub) putLocked(s protocol.SessionInfo) {
	now := h.now()
	r, ok := h.sessions[s.SessionID]
	if !ok {
		r = &Row{sampleBytes: s.Bytes, sampleAt: now}
		h.sessions[s.SessionID] = r
	}
	r.SessionInfo, r.State = s, stateOf(s)
	r.Rate = 0
	if s.Stage == protocol.StageStreaming || s.Stage == protocol.StageAwaitingContent {
		if dt := now.Sub(r.sampleAt).Seconds(); dt > 0 && s.Bytes > r.sampleBytes {
			r.Rate = float64(s.Bytes-r.sampleBytes) / dt
		}
	}
	r.sampleBytes, r.sampleAt = s.Bytes, now
}

// bumpLocked records a change (ids nil: everything) and wakes every event
// stream.
func (h *hub) bumpLocked(ids []string) {
	h.version++
	h.changed = ids
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (h *hub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// client returns the live connection, or nil while the daemon is away.
func (h *hub) client() *client.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.c
}

// State is what the page's event stream carries.
type State struct {
	Connected bool   `json:"connected"`
	Error     string `json:"error,omitempty"`
	// Socket is the daemon's socket and Start the command that starts a
	// daemon on it, for the page to say what to run while it is away.
	Socket  string `json:"socket"`
	Start   string `json:"start"`
	Version uint64 `json:"version"`
	// Changed names the sessions of the last change; empty means any.
	Changed []string `json:"changed,omitempty"`
}

func (h *hub) state() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return State{Connected: h.connected, Error: h.lastErr, Socket: h.socket, Start: client.StartCommand(h.socket), Version: h.version, Changed: h.changed}
}

// Query selects and pages sessions.
type Query struct {
	Workspace string
	State     string
	Text      string
	Offset    int
	Limit     int
}

// Page is one page of the sessions a Query selects, newest first.
type Page struct {
	State
	Total      int            `json:"total"`
	Offset     int            `json:"offset"`
	Sessions   []Row          `json:"sessions"`
	Workspaces []string       `json:"workspaces"`
	States     map[string]int `json:"states"`
	// Txs are the transactions of the selected sessions, with their files.
	Txs []Tx `json:"txs"`
}

// Tx is a transaction and its sessions' files.
type Tx struct {
	TxID  string   `json:"tx_id"`
	Files []TxFile `json:"files"`
}

// TxFile is one file of a transaction.
type TxFile struct {
	SessionID  string `json:"session_id"`
	TargetFile string `json:"target_file"`
	State      string `json:"state"`
}

func (h *hub) page(q Query) Page {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := Page{State: State{Connected: h.connected, Error: h.lastErr, Socket: h.socket, Start: client.StartCommand(h.socket), Version: h.version}, Offset: q.Offset,
		States: map[string]int{}, Sessions: []Row{}, Txs: []Tx{}, Workspaces: []string{}}
	text := strings.ToLower(q.Text)
	ws := map[string]bool{}
	var sel []*Row
	for _, r := range h.sessions {
		if r.WorkspaceRoot != "" {
			ws[r.WorkspaceRoot] = true
		}
		if q.Workspace != "" && r.WorkspaceRoot != q.Workspace {
			continue
		}
		if text != "" && !strings.Contains(strings.ToLower(r.TargetFile+" "+r.Intent+" "+r.SessionID+" "+r.TxID), text) {
			continue
		}
		p.States[r.State]++
		if q.State != "" && r.State != q.State {
			continue
		}
		sel = append(sel, r)
	}
	for w := range ws {
		p.Workspaces = append(p.Workspaces, w)
	}
	slices.Sort(p.Workspaces)
	slices.SortFunc(sel, func(a, b *Row) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.SessionID, b.SessionID)
	})
	p.Total = len(sel)
	txs := map[string]int{}
	for i, r := range sel {
		if r.TxID != "" {
			k, ok := txs[r.TxID]
			if !ok && len(p.Txs) < 100 {
				k = len(p.Txs)
				txs[r.TxID] = k
				p.Txs = append(p.Txs, Tx{TxID: r.TxID})
				ok = true
			}
			if ok {
				p.Txs[k].Files = append(p.Txs[k].Files, TxFile{r.SessionID, r.TargetFile, r.State})
			}
		}
		if i >= q.Offset && i < q.Offset+q.Limit {
			// A list row needs no write summary or findings: the
			// session's own view asks for them.
			row := *r
			row.Result, row.Validation, row.Truncation = nil, nil, nil
			p.Sessions = append(p.Sessions, row)
		}
	}
	return p
}

// workspaceOf is the workspace of a known session.
func (h *hub) workspaceOf(id string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.sessions[id]
	if !ok {
		return "", false
	}
	return r.WorkspaceRoot, true
}

// touch asks about a session at the next refresh, after the page acted on
// it.
func (h *hub) touch(id string) {
	h.mu.Lock()
	h.dirty[id] = true
	h.mu.Unlock()
}
