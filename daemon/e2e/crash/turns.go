package crash

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/protocol"
)

// A turn worker works in a workspace of its own, so that it is the only
// writer there and knows, at every instant, what each file should hold.
// Each round it begins a turn, writes some files through Orion sessions
// and others itself (as a shell would: overwrite, create, delete, rename),
// ends the turn, undoes it and sometimes redoes it, while the daemon is
// killed at random moments.

// turnNames is the small pool of files a turn worker touches, so its
// workspace stays small however long the run.
var turnNames = []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt"}

// files maps a file name to its content; a name absent from it is absent
// from the workspace.
type files map[string]string

func (f files) String() string {
	names := slices.Sorted(maps.Keys(f))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s(%d bytes)", n, len(f[n]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// snapshotDir reads every file of dir but the daemon's temp files, which
// findTemps counts on their own.
func snapshotDir(dir string) (files, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := files{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), atomicfile.TempPrefix) {
			continue
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s: unexpected %s in the workspace", filepath.Join(dir, e.Name()), e.Type())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = string(b)
	}
	return out, nil
}

// turnClient runs turn after turn in its workspace until ctx ends.
func (r *runner) turnClient(ctx context.Context, id int, rng *rand.Rand) {
	k := &conn{r: r}
	defer func() {
		if k.c != nil {
			k.c.Close()
		}
	}()
	ws := filepath.Join(r.root, fmt.Sprintf("turns%d", id))
	if err := os.MkdirAll(ws, 0o700); err != nil {
		r.fail("turn worker %d: %v", id, err)
		return
	}
	finishCtx := context.WithoutCancel(ctx)
	for n := 0; ctx.Err() == nil; n++ {
		if err := r.turnRound(finishCtx, k, rng, ws, n); err != nil {
			r.fail("turn worker %d round %d: %v", id, n, err)
			return
		}
	}
}

func (r *runner) turnRound(ctx context.Context, k *conn, rng *rand.Rand, ws string, n int) error {
	start, err := snapshotDir(ws)
	if err != nil {
		return err
	}
	var begun protocol.TurnBeginResult
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		// A begin whose reply a kill swallowed left a turn open, with no
		// change in it; this begin ends it.
		if begun, err = c.TurnBegin(ctx, protocol.TurnBeginParams{WorkspaceRoot: ws, Agent: "orioncrash", Label: fmt.Sprintf("round %d", n)}); err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("turn.begin: %w", err)
		}
	}
	if begun.Recording == protocol.RecordingTooBig {
		return fmt.Errorf("turn.begin: workspace recorded as too big: %s", begun.Warning)
	}

	// The turn's writes: one to three through Orion sessions, one to
	// three by the worker itself.
	cur := maps.Clone(start)
	for range 1 + rng.IntN(3) {
		name := turnNames[rng.IntN(len(turnNames))]
		content := fmt.Sprintf("session write, round %d\n", n) + randomContent(rng, 1+rng.IntN(8000))
		if err := r.sessionWrite(ctx, k, rng, filepath.Join(ws, name), content); err != nil {
			return err
		}
		cur[name] = content
	}
	for range 1 + rng.IntN(3) {
		name := turnNames[rng.IntN(len(turnNames))]
		path := filepath.Join(ws, name)
		_, exists := cur[name]
		switch op := rng.IntN(4); {
		case exists && op == 0:
			if err := os.Remove(path); err != nil {
				return err
			}
			delete(cur, name)
		case exists && op == 1:
			to := turnNames[rng.IntN(len(turnNames))]
			if to == name {
				continue
			}
			if err := os.Rename(path, filepath.Join(ws, to)); err != nil {
				return err
			}
			cur[to] = cur[name]
			delete(cur, name)
		default:
			content := fmt.Sprintf("shell write, round %d\n", n) + randomContent(rng, 1+rng.IntN(8000))
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				return err
			}
			cur[name] = content
		}
	}
	end := cur

	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		// turn.end of an ended turn answers with the turn, so a retry
		// after a swallowed reply is harmless.
		if _, err = c.TurnEnd(ctx, begun.TurnID); err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("turn.end: %w", err)
		}
	}
	r.turns.Add(1)
	if err := r.expectFiles(ws, end, "after turn.end"); err != nil {
		return err
	}

	opID, err := r.undoOrRedo(ctx, k, ws, begun.TurnID, false, "", start, end)
	if err != nil {
		return err
	}
	if rng.IntN(3) == 0 {
		if _, err := r.undoOrRedo(ctx, k, ws, begun.TurnID, true, opID, end, start); err != nil {
			return err
		}
	}
	return nil
}

// undoOrRedo undoes turnID (want is the turn's start, from its end) or,
// with redo, redoes its undo undoOf (want is the turn's end, from its
// start), surviving kills; it returns the operation's id when its reply
// came. When a kill swallows the reply, the files must be all as before
// or all as after once the daemon answers again, and the turn's state
// must say which.
func (r *runner) undoOrRedo(ctx context.Context, k *conn, ws, turnID string, redo bool, undoOf string, want, from files) (string, error) {
	what := "turn.undo"
	wantState := protocol.TurnUndone
	if redo {
		what = "turn.redo"
		wantState = protocol.TurnEnded
	}
	for {
		c, err := k.get(ctx)
		if err != nil {
			return "", err
		}
		var res protocol.TurnUndoResult
		switch {
		case !redo:
			res, err = c.TurnUndo(ctx, protocol.TurnUndoParams{TurnID: turnID})
		case undoOf != "":
			res, err = c.TurnRedo(ctx, protocol.TurnRedoParams{OperationID: undoOf})
		default:
			// The worker is the only one undoing in its workspace, and
			// retries only while the turn is still undone, so the newest
			// undo not redone is this turn's.
			res, err = c.TurnRedo(ctx, protocol.TurnRedoParams{Last: true, WorkspaceRoot: ws})
		}
		if err == nil {
			r.countOp(!redo)
			return res.OperationID, r.checkOpResult(ws, what, turnID, res, want, from)
		}
		var pe *protocol.Error
		if errors.As(err, &pe) {
			if pe.Code != protocol.CodeTurnState {
				return "", fmt.Errorf("%s %s: %w", what, turnID, err)
			}
			// A retry after a swallowed reply: the operation was done.
			info, gerr := r.turnInfo(ctx, k, turnID)
			if gerr != nil {
				return "", gerr
			}
			if info.State != wantState {
				return "", fmt.Errorf("%s %s refused (%v) but the turn is %s", what, turnID, err, info.State)
			}
			r.countOp(!redo)
			return "", nil
		}
		if err := k.broken(err); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		r.opsInterrupted.Add(1)
		// The kill may have come in the middle of the operation: once the
		// daemon answers (it recovers before it serves), the workspace
		// must be wholly as before or wholly as after, as the turn's
		// state says.
		info, err := r.turnInfo(ctx, k, turnID)
		if err != nil {
			return "", err
		}
		now, err := snapshotDir(ws)
		if err != nil {
			return "", err
		}
		switch {
		case maps.Equal(now, want) && info.State == wantState:
		case maps.Equal(now, from) && info.State != wantState:
		default:
			r.halfDone.Add(1)
			return "", fmt.Errorf("%s %s interrupted by a kill: after the restart the turn is %s and the workspace holds %v; want all of %v (done) or all of %v (not done)",
				what, turnID, info.State, now, want, from)
		}
		if info.State == wantState {
			// Done, but its id went with the reply: a redo names it by
			// Last instead.
			r.countOp(!redo)
			return "", nil
		}
	}
}

func (r *runner) countOp(undo bool) {
	if undo {
		r.undos.Add(1)
	} else {
		r.redos.Add(1)
	}
}

func (r *runner) turnInfo(ctx context.Context, k *conn, turnID string) (protocol.TurnInfo, error) {
	for {
		c, err := k.get(ctx)
		if err != nil {
			return protocol.TurnInfo{}, err
		}
		info, err := c.TurnGet(ctx, protocol.TurnGetParams{TurnID: turnID})
		if err == nil {
			return info, nil
		}
		if err := k.broken(err); err != nil {
			return protocol.TurnInfo{}, fmt.Errorf("turn.get %s: %w", turnID, err)
		}
	}
}

// checkOpResult checks an acknowledged undo or redo: every file the
// operation reports reverted or unchanged is as wanted, and no file is
// reported left (the worker is the only writer of its workspace).
func (r *runner) checkOpResult(ws, what, turnID string, res protocol.TurnUndoResult, want, from files) error {
	for _, f := range res.Files {
		switch f.Outcome {
		case protocol.UndoReverted, protocol.UndoUnchanged:
		default:
			r.opsWrong.Add(1)
			return fmt.Errorf("%s %s acknowledged with %s %s (%s), though nothing else wrote in the workspace", what, turnID, f.Path, f.Outcome, f.Reason)
		}
	}
	return r.expectFiles(ws, want, fmt.Sprintf("after %s %s was acknowledged (from %v)", what, turnID, from))
}

func (r *runner) expectFiles(ws string, want files, when string) error {
	now, err := snapshotDir(ws)
	if err != nil {
		return err
	}
	if !maps.Equal(now, want) {
		r.opsWrong.Add(1)
		return fmt.Errorf("%s: the workspace holds %v, want %v", when, now, want)
	}
	return nil
}

// sessionWrite overwrites target with content through one Orion session,
// resuming across kills.
func (r *runner) sessionWrite(ctx context.Context, k *conn, rng *rand.Rand, target, content string) error {
	var begun protocol.BeginResult
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if begun, err = c.Begin(ctx, protocol.BeginParams{Intent: "crash test turn", TargetFile: target, Operation: protocol.OpOverwrite}); err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
	}
	chunks := split(rng, content+begun.EndMarker+"\n")
	for seq := uint64(1); seq <= uint64(len(chunks)); {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if _, err = c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: seq, Chunk: chunks[seq-1]}); err == nil {
			r.chunks.Add(1)
			r.acked.Add(int64(len(chunks[seq-1])))
			seq++
			continue
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("append seq %d: %w", seq, err)
		}
		next, err := r.resume(ctx, k, begun.SessionID)
		if errors.Is(err, errBegunLost) && seq == 1 {
			// Nothing of it was acknowledged: begin again.
			r.begunLost.Add(1)
			return r.sessionWrite(ctx, k, rng, target, content)
		}
		if err != nil {
			return err
		}
		if next < seq {
			lost := 0
			for s := next; s < seq; s++ {
				lost += len(chunks[s-1])
			}
			r.lost.Add(int64(lost))
			return fmt.Errorf("session %s resumed at seq %d but seq %d was acknowledged: %d bytes lost", begun.SessionID, next, seq-1, lost)
		}
		seq = next
	}
	for {
		c, err := k.get(ctx)
		if err != nil {
			return err
		}
		if _, err = c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID}); err == nil {
			break
		}
		if err := k.broken(err); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != content {
		r.mismatched.Add(1)
		return fmt.Errorf("%s holds %d bytes after finalize, want the %d sent (%v)", target, len(got), len(content), err)
	}
	r.sessions.Add(1)
	return nil
}
