package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/linediff"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// turnRecord is a turn as stored.
type turnRecord struct {
	ID        string     `json:"id"`
	Root      string     `json:"root"`
	Agent     string     `json:"agent,omitempty"`
	Label     string     `json:"label,omitempty"`
	State     string     `json:"state"`
	Start     string     `json:"start,omitempty"`
	End       string     `json:"end,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Changes   []Change   `json:"changes,omitempty"`
	// Renamed maps a created path to the deleted path it was renamed
	// from (same content).
	Renamed  map[string]string       `json:"renamed,omitempty"`
	Writers  map[string]sessionWrite `json:"writers,omitempty"`
	Sessions []string                `json:"sessions,omitempty"`
	Warning  string                  `json:"warning,omitempty"`
	// LastOp is the newest undo or redo of the turn.
	LastOp string `json:"last_op,omitempty"`
}

func (e *Engine) getTurn(id string) (*turnRecord, error) {
	if id == "" {
		return nil, missingField("turn_id")
	}
	var t turnRecord
	found, err := getJSON(e.cfg.Store, bucketTurns, []byte(id), &t)
	if err != nil {
		return nil, ioErr("reading the turn", err)
	}
	if !found {
		return nil, protocol.Errorf(protocol.CodeTurnNotFound, protocol.ReasonTurnNotFound,
			"no turn has the id %s (never begun, or dropped after --checkpoint-retention); list them with turn.list", id)
	}
	return &t, nil
}

func ioErr(doing string, err error) *protocol.Error {
	return protocol.Errorf(protocol.CodeIO, protocol.ReasonIO, "%s: %v", doing, err)
}

// Begin starts a turn in a workspace: a checkpoint, then the turn open
// until End. A turn already open there is ended first.
func (e *Engine) Begin(p protocol.TurnBeginParams) (protocol.TurnBeginResult, error) {
	root, err := e.resolve(p.WorkspaceRoot)
	if err != nil {
		return protocol.TurnBeginResult{}, err
	}
	w, err := e.workspace(root)
	if err != nil {
		return protocol.TurnBeginResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var res protocol.TurnBeginResult
	if w.rec.OpenTurn != "" {
		if _, err := e.end(w, w.rec.OpenTurn); err != nil {
			return res, err
		}
		res.Ended = w.rec.OpenTurn
	}
	t := &turnRecord{ID: newID(), Root: root, Agent: p.Agent, Label: p.Label, State: protocol.TurnOpen,
		StartedAt: e.cfg.Clock.Now().UTC()}
	cp, err := e.checkpoint(w, "", false, false)
	if perr, ok := err.(*protocol.Error); ok && perr.Data.Reason == protocol.ReasonWorkspaceTooBig {
		t.State = protocol.TurnUnrecorded
		t.Warning = perr.Message
		res.Warning = perr.Message
		res.Recording = protocol.RecordingTooBig
	} else if err != nil {
		return protocol.TurnBeginResult{}, err
	} else {
		t.Start = cp.ID
		res.CheckpointID = cp.ID
		res.Recording = e.recording(w)
	}
	rec := w.rec
	rec.OpenTurn = t.ID
	if err := e.cfg.Store.PutKVs(putJSON(bucketTurns, t.ID, t), putJSON(bucketWorkspaces, root, rec)); err != nil {
		return protocol.TurnBeginResult{}, ioErr("storing the turn", err)
	}
	w.setRec(rec)
	w.resetWrites()
	e.publish(w)
	res.TurnID = t.ID
	e.cfg.Trace.Record(trace.Event{Time: t.StartedAt, Type: protocol.TraceTurn, Fields: map[string]any{
		"workspace_root": root, "turn_id": t.ID, "agent": t.Agent, "state": t.State, "recording": res.Recording,
		"warning": res.Warning}})
	return res, nil
}

// End ends a turn: a checkpoint, and the files changed since its start.
// Ending a turn that has ended returns it as it is.
func (e *Engine) End(id string) (protocol.TurnInfo, error) {
	t, err := e.getTurn(id)
	if err != nil {
		return protocol.TurnInfo{}, err
	}
	if t.State != protocol.TurnOpen && t.State != protocol.TurnUnrecorded || t.EndedAt != nil {
		return e.info(t, false, 0), nil
	}
	w, err := e.workspace(t.Root)
	if err != nil {
		return protocol.TurnInfo{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err = e.end(w, id)
	if err != nil {
		return protocol.TurnInfo{}, err
	}
	e.retain()
	return e.info(t, false, 0), nil
}

// end ends the turn id of w, under w's lock.
func (e *Engine) end(w *workspace, id string) (*turnRecord, error) {
	t, err := e.getTurn(id)
	if err != nil {
		return nil, err
	}
	if t.EndedAt != nil {
		return t, nil
	}
	now := e.cfg.Clock.Now().UTC()
	t.EndedAt = &now
	if t.State == protocol.TurnOpen {
		cp, err := e.checkpoint(w, "", false, false)
		if perr, ok := err.(*protocol.Error); ok && perr.Data.Reason == protocol.ReasonWorkspaceTooBig {
			t.State = protocol.TurnUnrecorded
			t.Warning = perr.Message
		} else if err != nil {
			return nil, err
		} else {
			t.End = cp.ID
			t.State = protocol.TurnEnded
			changes, err := e.compose(t.Root, t.Start, t.End)
			if err != nil {
				return nil, err
			}
			t.Changes = changes
			t.Renamed = renames(changes)
			t.Writers = map[string]sessionWrite{}
			w.writesMu.Lock()
			for _, c := range changes {
				if sw, ok := w.writes[c.Path]; ok && c.New != nil && c.New.Type == TypeFile && c.New.Hash.hex() == sw.SHA256 {
					t.Writers[c.Path] = sw
				}
			}
			seen := map[string]bool{}
			for _, sw := range w.writes {
				if !seen[sw.Session] {
					seen[sw.Session] = true
					t.Sessions = append(t.Sessions, sw.Session)
				}
			}
			slices.Sort(t.Sessions)
			w.writesMu.Unlock()
		}
	}
	rec := w.rec
	if rec.OpenTurn == id {
		rec.OpenTurn = ""
	}
	// The turn keeps its writers in its record from now on.
	written, err := e.writeKeys(id)
	if err != nil {
		return nil, ioErr("reading the turn's writers", err)
	}
	if err := e.cfg.Store.Update([]store.Put{putJSON(bucketTurns, t.ID, t), putJSON(bucketWorkspaces, w.root, rec)},
		[]store.Del{{Bucket: bucketWrites, Keys: written}}); err != nil {
		return nil, ioErr("storing the turn", err)
	}
	w.setRec(rec)
	w.resetWrites()
	e.publish(w)
	e.cfg.Trace.Record(trace.Event{Time: now, Type: protocol.TraceTurn, Fields: map[string]any{
		"workspace_root": t.Root, "turn_id": t.ID, "agent": t.Agent, "state": t.State, "files": len(t.Changes)}})
	return t, nil
}

func (h Hash) hex() string {
	b, _ := h.MarshalText()
	return string(b)
}

// compose returns what changed in root from checkpoint from (exclusive)
// to to (inclusive): per path, the state before the first change and
// after the last, paths back where they were left out.
func (e *Engine) compose(root, from, to string) ([]Change, error) {
	if from == "" || to == "" || from == to {
		return nil, nil
	}
	byPath := map[string]*Change{}
	var order []string
	err := e.cfg.Store.ScanKV(bucketCheckpoints, []byte(from), func(k, v []byte) (bool, error) {
		if string(k) == from {
			return true, nil
		}
		if string(k) > to {
			return false, nil
		}
		var cp cpRecord
		if err := json.Unmarshal(v, &cp); err != nil {
			return false, err
		}
		if cp.Root != root {
			return true, nil
		}
		for _, c := range cp.Changes {
			if prev := byPath[c.Path]; prev != nil {
				prev.New = c.New
				continue
			}
			cc := c
			byPath[c.Path] = &cc
			order = append(order, c.Path)
		}
		return true, nil
	})
	if err != nil {
		return nil, ioErr("reading checkpoints", err)
	}
	out := make([]Change, 0, len(order))
	for _, p := range order {
		c := byPath[p]
		if sameState(c.Old, c.New) {
			continue
		}
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// renames pairs deleted files with created files of the same content,
// each content used once.
func renames(changes []Change) map[string]string {
	deleted := map[Hash][]string{}
	for _, c := range changes {
		if c.New == nil && c.Old != nil && c.Old.Type == TypeFile && !c.Old.Big {
			deleted[c.Old.Hash] = append(deleted[c.Old.Hash], c.Path)
		}
	}
	out := map[string]string{}
	for _, c := range changes {
		if c.Old == nil && c.New != nil && c.New.Type == TypeFile && !c.New.Big {
			if from := deleted[c.New.Hash]; len(from) > 0 {
				out[c.Path] = from[0]
				deleted[c.New.Hash] = from[1:]
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// info is the wire form of t, with diffs when asked (each at most
// maxDiff bytes).
func (e *Engine) info(t *turnRecord, diffs bool, maxDiff int) protocol.TurnInfo {
	ti, _ := e.infoCtx(context.Background(), t, diffs, maxDiff)
	return ti
}

// infoCtx is info that stops, with ctx's error, once ctx is done: a
// turn's diffs read and compare the contents of every file it changed.
func (e *Engine) infoCtx(ctx context.Context, t *turnRecord, diffs bool, maxDiff int) (protocol.TurnInfo, error) {
	ti := protocol.TurnInfo{TurnID: t.ID, WorkspaceRoot: t.Root, Agent: t.Agent, Label: t.Label, State: t.State,
		StartCheckpoint: t.Start, EndCheckpoint: t.End, StartedAt: t.StartedAt, EndedAt: t.EndedAt,
		Files: []protocol.TurnFile{}, Sessions: t.Sessions, Warning: t.Warning}
	renamedFrom := map[string]bool{}
	for _, from := range t.Renamed {
		renamedFrom[from] = true
	}
	byPath := map[string]Change{}
	for _, c := range t.Changes {
		byPath[c.Path] = c
	}
	for _, c := range t.Changes {
		if renamedFrom[c.Path] {
			continue // shown with its new name
		}
		f := protocol.TurnFile{Path: c.Path, BytesBefore: c.Old.size(), BytesAfter: c.New.size(),
			ModeBefore: c.Old.modeString(), ModeAfter: c.New.modeString(), Writer: protocol.WriterOutside, Restorable: true}
		old := c.Old
		switch {
		case t.Renamed[c.Path] != "":
			f.Kind = protocol.ChangeRenamed
			f.From = t.Renamed[c.Path]
			old = byPath[f.From].Old
			f.BytesBefore = old.size()
			f.ModeBefore = old.modeString()
		case c.Old == nil:
			f.Kind = protocol.ChangeCreated
		case c.New == nil:
			f.Kind = protocol.ChangeDeleted
		case sameContent(c.Old, c.New):
			f.Kind = protocol.ChangeMode
		default:
			f.Kind = protocol.ChangeModified
		}
		f.Symlink = (c.New != nil && c.New.Type == TypeSymlink) || (c.Old != nil && c.Old.Type == TypeSymlink)
		if (old != nil && !old.restorable()) || (c.New != nil && !c.New.restorable()) {
			f.Restorable = old.restorable()
			f.Note = "over --checkpoint-max-file-bytes: its content was not recorded"
		}
		if sw, ok := t.Writers[c.Path]; ok {
			f.Writer = sw.Session
		}
		if diffs {
			failpoint.Wait(ctx, "turn.get.diff")
			if err := ctx.Err(); err != nil {
				return protocol.TurnInfo{}, err
			}
			e.diff(&f, old, c.New, maxDiff)
		}
		ti.Files = append(ti.Files, f)
	}
	return ti, nil
}

// diffContext is the lines of context around each hunk.
const diffContext = 3

// diff fills f's unified diff from old to cur, bounded.
func (e *Engine) diff(f *protocol.TurnFile, old, cur *Entry, maxDiff int) {
	content := func(en *Entry) ([]byte, bool) {
		switch {
		case en == nil || en.Type == TypeDir:
			return nil, true
		case en.Type == TypeSymlink:
			return []byte(en.Link + "\n"), true
		case en.Big:
			return nil, false
		}
		b, err := e.cfg.Blobs.Get([32]byte(en.Hash))
		return b, err == nil
	}
	a, ok1 := content(old)
	b, ok2 := content(cur)
	if !ok1 || !ok2 {
		return
	}
	if merge.IsBinary(a) || merge.IsBinary(b) {
		f.Binary = true
		return
	}
	from, to := "a/"+f.Path, "b/"+f.Path
	if f.From != "" {
		from = "a/" + f.From
	}
	// The project's minimal line diff, as dry runs and the page show.
	d := linediff.Unified(from, to, a, b, diffContext)
	if len(d) > maxDiff {
		d = string(bytes.ToValidUTF8([]byte(d[:maxDiff]), nil))
		f.DiffTruncated = true
	}
	f.Diff = d
}

// Get returns one turn, with diffs when asked; it stops, with ctx's error,
// once ctx is done.
func (e *Engine) Get(ctx context.Context, p protocol.TurnGetParams) (protocol.TurnInfo, error) {
	t, err := e.getTurn(p.TurnID)
	if err != nil {
		return protocol.TurnInfo{}, err
	}
	maxDiff := p.MaxDiffBytes
	if maxDiff <= 0 {
		maxDiff = protocol.DefaultDiffBytes
	}
	maxDiff = min(maxDiff, protocol.MaxDiffBytes)
	return e.infoCtx(ctx, t, p.Diffs, maxDiff)
}

// List returns a workspace's turns, newest first, a page at a time. The
// turns of every workspace are read to find a page of one: it stops, with
// ctx's error, once ctx is done.
func (e *Engine) List(ctx context.Context, p protocol.TurnListParams) (protocol.TurnListResult, error) {
	if p.WorkspaceRoot == "" {
		return protocol.TurnListResult{}, missingField("workspace_root")
	}
	root, err := e.access().guard.Workspace(p.WorkspaceRoot)
	if err != nil {
		return protocol.TurnListResult{}, pathError(err)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = protocol.DefaultTurnListLimit
	}
	limit = min(limit, protocol.MaxTurnListLimit)
	res := protocol.TurnListResult{Turns: []protocol.TurnInfo{}}
	var from []byte
	if p.Cursor != "" {
		from = []byte(p.Cursor)
	}
	read := 0
	err = e.cfg.Store.ScanKVReverse(bucketTurns, from, func(k, v []byte) (bool, error) {
		if read++; read%listCheckEvery == 1 {
			failpoint.Wait(ctx, "turn.list.scan")
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		if p.Cursor != "" && string(k) >= p.Cursor {
			return true, nil
		}
		var t turnRecord
		if err := json.Unmarshal(v, &t); err != nil {
			return false, err
		}
		if t.Root != root {
			return true, nil
		}
		if len(res.Turns) == limit {
			res.NextCursor = res.Turns[len(res.Turns)-1].TurnID
			return false, nil
		}
		res.Turns = append(res.Turns, e.info(&t, false, 0))
		return true, nil
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return res, err
		}
		return res, ioErr("listing turns", err)
	}
	return res, nil
}

// listCheckEvery is how many turns a listing reads between two checks
// that its caller is still there.
const listCheckEvery = 256

// SessionWrote tells the engine an Orion session wrote path (absolute)
// with content sha256: within an open turn of its workspace, the file's
// writer is that session while its content stays what the session wrote.
// It never waits for a checkpoint in progress.
func (e *Engine) SessionWrote(sessionID, path, sha256 string) {
	ws := e.holding(path)
	if ws == nil || ws.openTurn() == "" {
		return
	}
	rel, _ := filepath.Rel(ws.root, path)
	rel = filepath.ToSlash(rel)
	sw := sessionWrite{Session: sessionID, SHA256: sha256}
	ws.writesMu.Lock()
	defer ws.writesMu.Unlock()
	turn := ws.openTurn()
	if turn == "" {
		return
	}
	ws.writes[rel] = sw
	// It rides the next commit, the session's own completion record's
	// usually: a crash loses it only with that record, which recovery
	// redoes without a writer (the file then shows as written outside).
	e.cfg.Store.PutKVsLater(func(err error) {
		if err != nil {
			e.cfg.Logger.Warn("checkpoints: storing a session's write in the open turn", "turn", turn, "session", sessionID, "err", err)
		}
	}, putJSON(bucketWrites, turn+"\x00"+rel, sw))
}

// writeKeys returns the keys of the writes kept for turn id.
func (e *Engine) writeKeys(id string) ([][]byte, error) {
	prefix := []byte(id + "\x00")
	var keys [][]byte
	err := e.cfg.Store.ScanKVPrefix(bucketWrites, prefix, func(k, _ []byte) (bool, error) {
		keys = append(keys, bytes.Clone(k))
		return true, nil
	})
	return keys, err
}

// holding returns the recorded workspace that holds path, the innermost.
func (e *Engine) holding(path string) *workspace {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ws *workspace
	for root, w := range e.ws {
		if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
			if ws == nil || len(root) > len(ws.root) {
				ws = w
			}
		}
	}
	return ws
}

// OpenTurn returns the turn open in the workspace holding path, if any:
// the session writing path belongs to it. It never waits for a
// checkpoint in progress.
func (e *Engine) OpenTurn(path string) string {
	if ws := e.holding(path); ws != nil {
		return ws.openTurn()
	}
	return ""
}
