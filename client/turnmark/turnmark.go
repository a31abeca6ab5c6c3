// Package turnmark marks an agent's turns in oriond (turn.begin, turn.end)
// for the doors that see the agent's traffic: the proxy, which sees when
// the person speaks and when the model hands back, and the MCP server,
// which sees only tool calls and marks a turn by its quiet periods.
//
// Marking never stands in the agent's way: a daemon that is down or
// refuses a turn is logged once, and the agent's request goes on.
package turnmark

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/protocol"
)

// Defaults for Config.
const (
	// DefaultIdle ends a turn the proxy saw begin but never saw end (the
	// agent was interrupted, or its last request failed): ten minutes is
	// longer than a model's slowest answer plus a long tool run, so a
	// live turn is not split.
	DefaultIdle = 10 * time.Minute
	// DefaultQuiet is the MCP server's quiet period: a turn begins at the
	// first call after it and ends once it passes with no call.
	DefaultQuiet = 60 * time.Second
	// callTimeout bounds one turn.begin or turn.end. A workspace's first
	// checkpoint reads every file; later ones take milliseconds.
	callTimeout = 2 * time.Minute
)

// Config configures a Marker.
type Config struct {
	// Dial connects to oriond.
	Dial func(ctx context.Context) (*client.Client, error)
	// Agent names who works in the turns (claude, codex, a command).
	Agent string
	// Idle ends a turn after this long with no activity (0: DefaultIdle).
	Idle   time.Duration
	Logger *slog.Logger
}

// Marker tracks the open turn of each workspace.
type Marker struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	conn   *client.Client
	open   map[string]*turn
	warned bool
	closed bool
	wg     sync.WaitGroup
}

type turn struct {
	// mu orders the daemon calls of one workspace: an end never passes
	// the begin it ends.
	mu    sync.Mutex
	id    string
	timer *time.Timer
	agent string
}

// New returns a Marker.
func New(cfg Config) *Marker {
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Marker{cfg: cfg, log: cfg.Logger, open: map[string]*turn{}}
}

// Begin starts a turn in ws, ending the one open there (the daemon ends
// it itself: its end checkpoint is this turn's start). It returns once
// the start checkpoint is taken, so nothing the agent does next is missed.
// agent overrides Config.Agent when not empty.
func (m *Marker) Begin(ctx context.Context, ws, agent string) {
	m.begin(ctx, ws, agent, false)
}

// begin is Begin; with ifNone, a turn another call opened meanwhile is
// kept (two tool calls at once begin one turn, not two).
func (m *Marker) begin(ctx context.Context, ws, agent string, ifNone bool) {
	if agent == "" {
		agent = m.cfg.Agent
	}
	t := m.slot(ws)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ifNone && t.id != "" {
		m.Active(ws)
		return
	}
	c := m.client(ctx)
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.TurnBegin(ctx, protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: agent})
	if err != nil {
		m.refused(ws, err)
		t.id = ""
		return
	}
	if res.Warning != "" {
		m.log.Warn("turn begun without a checkpoint", "workspace", ws, "turn", res.TurnID, "warning", res.Warning)
	}
	t.id, t.agent = res.TurnID, agent
	m.log.Debug("turn begun", "workspace", ws, "turn", res.TurnID, "agent", agent, "ended", res.Ended)
	m.arm(ws, t)
}

// Active says the agent is still at work in ws: the idle period starts
// again. Without an open turn it does nothing.
func (m *Marker) Active(ws string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.open[ws]; t != nil && t.timer != nil {
		t.timer.Reset(m.cfg.Idle)
	}
}

// Call is the MCP server's rule: a call with no turn open in ws begins
// one (agent as in Begin); every call starts the quiet period again, and
// the turn ends when it passes.
func (m *Marker) Call(ctx context.Context, ws, agent string) {
	m.mu.Lock()
	t := m.open[ws]
	has := t != nil && t.timer != nil
	m.mu.Unlock()
	if has {
		m.Active(ws)
		return
	}
	m.begin(ctx, ws, agent, true)
}

// End ends the turn open in ws, if any, without waiting for the daemon.
func (m *Marker) End(ws string) {
	m.mu.Lock()
	t := m.open[ws]
	if t == nil || m.closed {
		m.mu.Unlock()
		return
	}
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		m.end(ws, t)
	}()
}

// Close ends every open turn and waits for the daemon's answers.
func (m *Marker) Close() {
	m.mu.Lock()
	var wss []string
	for ws := range m.open {
		wss = append(wss, ws)
	}
	m.mu.Unlock()
	for _, ws := range wss {
		m.End(ws)
	}
	m.wg.Wait()
	m.mu.Lock()
	m.closed = true
	if m.conn != nil {
		m.conn.Close()
		m.conn = nil
	}
	m.mu.Unlock()
}

func (m *Marker) end(ws string, t *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.id == "" {
		return
	}
	id := t.id
	t.id = ""
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c := m.client(ctx)
	if c == nil {
		return
	}
	if _, err := c.TurnEnd(ctx, id); err != nil {
		m.refused(ws, err)
		return
	}
	m.log.Debug("turn ended", "workspace", ws, "turn", id)
}

// slot is ws's turn record, made on first use.
func (m *Marker) slot(ws string) *turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	t := m.open[ws]
	if t == nil {
		t = &turn{}
		m.open[ws] = t
	}
	return t
}

// arm starts ws's idle timer; t.mu is held.
func (m *Marker) arm(ws string, t *turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
	var timer *time.Timer
	timer = time.AfterFunc(m.cfg.Idle, func() {
		m.mu.Lock()
		if t.timer != timer {
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		m.End(ws)
	})
	t.timer = timer
}

// client is the connection to oriond, dialled on first use and again
// after it broke; nil when oriond cannot be reached.
func (m *Marker) client(ctx context.Context) *client.Client {
	m.mu.Lock()
	c := m.conn
	m.mu.Unlock()
	if c != nil {
		select {
		case <-c.Done():
		default:
			return c
		}
	}
	c, err := m.cfg.Dial(ctx)
	if err != nil {
		m.refused("", err)
		return nil
	}
	m.mu.Lock()
	if m.conn != nil {
		m.conn.Close()
	}
	m.conn = c
	m.mu.Unlock()
	return c
}

// refused logs the first time the daemon would not mark a turn (a daemon
// without checkpoints, a workspace outside its roots, the daemon down);
// the rest go to the debug log, so a long session's log is not flooded.
func (m *Marker) refused(ws string, err error) {
	m.mu.Lock()
	first := !m.warned
	m.warned = true
	m.mu.Unlock()
	if first {
		m.log.Warn("oriond did not mark the agent's turn; the agent goes on, its turns are not undoable as turns", "workspace", ws, "err", err)
		return
	}
	m.log.Debug("turn not marked", "workspace", ws, "err", err)
}
