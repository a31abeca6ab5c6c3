package checkpoint

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/blobstore"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// FailpointUndoFile is passed before each file an undo or a redo writes,
// for crash tests: killed there, the next start finishes the operation.
const FailpointUndoFile = "checkpoint-undo-file"

// Operation kinds and states.
const (
	opUndo     = "undo"
	opRedo     = "redo"
	opApplying = "applying"
	opDone     = "done"
)

// opRecord is an undo or a redo: its plan, journaled before the first
// write, and its outcome.
type opRecord struct {
	ID        string                    `json:"id"`
	Root      string                    `json:"root"`
	Turn      string                    `json:"turn"`
	Kind      string                    `json:"kind"`
	Of        string                    `json:"of,omitempty"`
	State     string                    `json:"state"`
	CreatedAt time.Time                 `json:"created_at"`
	Before    string                    `json:"before,omitempty"`
	Actions   []action                  `json:"actions"`
	Results   []protocol.UndoFileResult `json:"results"`
	RedoneBy  string                    `json:"redone_by,omitempty"`
}

// action is one path an operation writes: from Pre (the state planned
// against) to Post (nil: removed).
type action struct {
	Path string `json:"path"`
	Pre  *Entry `json:"pre,omitempty"`
	Post *Entry `json:"post,omitempty"`
	// Raw: a protected path put back to the content recorded at the
	// turn's start, written without the protection.
	Raw bool `json:"raw,omitempty"`
	// Result is the index of this path's result.
	Result int `json:"result"`
}

// Hunks and their texts are bounded in a reply.
const (
	maxHunks     = 16
	maxHunkBytes = 4 << 10
)

// Undo undoes a turn (turn.undo).
func (e *Engine) Undo(p protocol.TurnUndoParams) (protocol.TurnUndoResult, error) {
	var t *turnRecord
	var err error
	switch {
	case p.TurnID != "":
		t, err = e.getTurn(p.TurnID)
	case p.Last:
		t, err = e.lastTurn(p.WorkspaceRoot)
	default:
		return protocol.TurnUndoResult{}, missingField("turn_id")
	}
	if err != nil {
		return protocol.TurnUndoResult{}, err
	}
	switch t.State {
	case protocol.TurnOpen:
		return protocol.TurnUndoResult{}, protocol.Errorf(protocol.CodeTurnState, protocol.ReasonTurnOpen,
			"turn %s has not ended: end it (turn.end) before undoing it", t.ID)
	case protocol.TurnUndone:
		return protocol.TurnUndoResult{}, protocol.Errorf(protocol.CodeTurnState, protocol.ReasonTurnUndone,
			"turn %s is undone already (operation %s); redo that operation to bring it back", t.ID, t.LastOp)
	case protocol.TurnUnrecorded:
		return protocol.TurnUndoResult{}, protocol.Errorf(protocol.CodeTurnState, protocol.ReasonTurnUnrecorded,
			"turn %s has no checkpoints (its workspace was too big to record), so it cannot be undone", t.ID)
	}
	w, err := e.workspace(t.Root)
	if err != nil {
		return protocol.TurnUndoResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The turn as stored now, under the lock: another undo may have won.
	if t, err = e.getTurn(t.ID); err != nil {
		return protocol.TurnUndoResult{}, err
	}
	if t.State != protocol.TurnEnded {
		return protocol.TurnUndoResult{}, protocol.Errorf(protocol.CodeTurnState, protocol.ReasonTurnUndone,
			"turn %s is %s; only an ended turn is undone", t.ID, t.State)
	}
	return e.operate(w, t, opUndo, "", t.Changes, t.Renamed, p.AllOrNothing, p.DryRun)
}

// Redo takes an undo back (turn.redo) under the same rules.
func (e *Engine) Redo(p protocol.TurnRedoParams) (protocol.TurnUndoResult, error) {
	var op *opRecord
	var err error
	switch {
	case p.OperationID != "":
		op, err = e.getOp(p.OperationID)
	case p.Last:
		op, err = e.lastUndo(p.WorkspaceRoot)
	default:
		return protocol.TurnUndoResult{}, missingField("operation_id")
	}
	if err != nil {
		return protocol.TurnUndoResult{}, err
	}
	if op.Kind != opUndo || op.RedoneBy != "" {
		return protocol.TurnUndoResult{}, protocol.Errorf(protocol.CodeTurnState, protocol.ReasonTurnUndone,
			"operation %s is not an undo waiting to be redone (a redo, or redone already by %s)", op.ID, op.RedoneBy)
	}
	w, err := e.workspace(op.Root)
	if err != nil {
		return protocol.TurnUndoResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if op, err = e.getOp(op.ID); err != nil {
		return protocol.TurnUndoResult{}, err
	}
	if op.RedoneBy != "" || op.State != opDone {
		return protocol.TurnUndoResult{}, protocol.Errorf(protocol.CodeTurnState, protocol.ReasonTurnUndone,
			"operation %s is redone already (by %s)", op.ID, op.RedoneBy)
	}
	t, err := e.getTurn(op.Turn)
	if err != nil {
		return protocol.TurnUndoResult{}, err
	}
	var changes []Change
	for _, a := range op.Actions {
		if r := op.Results[a.Result]; r.Outcome == protocol.UndoReverted || r.Outcome == protocol.UndoMerged {
			changes = append(changes, Change{Path: a.Path, Old: a.Pre, New: a.Post})
		}
	}
	return e.operate(w, t, opRedo, op.ID, changes, nil, p.AllOrNothing, p.DryRun)
}

// operate plans reverting changes (each from New back to Old) against the
// workspace now, and unless a dry run or refused, journals and applies it.
func (e *Engine) operate(w *workspace, t *turnRecord, kind, of string, changes []Change, renamed map[string]string,
	allOrNothing, dryRun bool) (protocol.TurnUndoResult, error) {
	res := protocol.TurnUndoResult{TurnID: t.ID, DryRun: dryRun, Files: []protocol.UndoFileResult{}}
	before, err := e.checkpoint(w, "", false, false)
	if err != nil {
		return res, err
	}
	res.CheckpointID = before.ID
	actions, results, merged := e.plan(w, kind, changes, renamed)
	res.Files = results
	refuse := false
	for _, r := range results {
		if r.Outcome == protocol.UndoLeft || r.Outcome == protocol.UndoNotRestorable {
			refuse = allOrNothing
		}
	}
	if dryRun || refuse {
		res.Refused = refuse
		e.traceOp(t, "", kind, res)
		return res, nil
	}
	op := &opRecord{ID: newID(), Root: w.root, Turn: t.ID, Kind: kind, Of: of, State: opApplying,
		CreatedAt: e.cfg.Clock.Now().UTC(), Before: before.ID, Actions: actions, Results: results}
	if err := e.journal(op, merged); err != nil {
		return res, err
	}
	e.apply(op)
	if err := e.finish(op); err != nil {
		return res, err
	}
	// The operation's own writes make their own checkpoint, so a later
	// turn does not count them.
	if _, err := e.checkpoint(w, "", false, false); err != nil {
		e.cfg.Logger.Warn("checkpoint after an undo", "workspace", w.root, "err", err)
	}
	res.OperationID = op.ID
	res.Files = op.Results
	e.traceOp(t, op.ID, kind, res)
	return res, nil
}

// journal stores the merged contents and op, before anything is written:
// from here a crash is finished at the next start.
func (e *Engine) journal(op *opRecord, merged []blobstore.Blob) error {
	e.sweepMu.RLock()
	defer e.sweepMu.RUnlock()
	if len(merged) > 0 {
		if _, err := e.cfg.Blobs.Put(merged); err != nil {
			return ioErr("storing merged contents", err)
		}
	}
	if err := e.cfg.Store.PutKVs(putJSON(bucketOps, op.ID, op)); err != nil {
		return ioErr("journaling the operation", err)
	}
	return nil
}

func (e *Engine) traceOp(t *turnRecord, opID, kind string, res protocol.TurnUndoResult) {
	counts := map[string]int{}
	for _, f := range res.Files {
		counts[f.Outcome]++
	}
	e.cfg.Trace.Record(trace.Event{Time: e.cfg.Clock.Now(), Type: protocol.TraceTurnUndo, Fields: map[string]any{
		"turn_id": t.ID, "operation_id": opID, "kind": kind, "dry_run": res.DryRun, "refused": res.Refused,
		"outcomes": counts}})
}

// plan decides each path: its outcome and, where something is written,
// its action. merged are contents a merge produced, to store first.
func (e *Engine) plan(w *workspace, kind string, changes []Change, renamed map[string]string) ([]action, []protocol.UndoFileResult, []blobstore.Blob) {
	var actions []action
	var results []protocol.UndoFileResult
	var merged []blobstore.Blob
	byPath := map[string]int{}
	for _, c := range changes {
		cur := w.t.entries[c.Path]
		r := protocol.UndoFileResult{Path: c.Path}
		var post *Entry
		write := false
		switch {
		case sameState(cur, c.Old):
			r.Outcome = protocol.UndoUnchanged
		case sameState(cur, c.New):
			if !c.Old.restorable() {
				r.Outcome, r.Reason = protocol.UndoNotRestorable, "its content at the turn's start was over --checkpoint-max-file-bytes, so it was not recorded"
				break
			}
			r.Outcome, post, write = protocol.UndoReverted, c.Old, true
		case isText3(c.Old, c.New, cur):
			post, r = e.merge3(c, cur, r, &merged)
			write = post != nil
		default:
			r.Outcome = protocol.UndoLeft
			r.Reason = "changed after the turn"
			if cur == nil {
				r.Reason = "removed after the turn"
			}
			if !c.Old.restorable() || (cur != nil && cur.Big) {
				r.Outcome, r.Reason = protocol.UndoNotRestorable, "over --checkpoint-max-file-bytes"
			}
		}
		if write {
			abs := filepath.Join(w.root, filepath.FromSlash(c.Path))
			a := action{Path: c.Path, Pre: cur, Post: post, Result: len(results)}
			if _, prot := e.access().guard.Protected(abs); prot {
				// Decided: only the person's own content recorded at the
				// turn's start may go back to a protected path.
				if kind == opUndo && r.Outcome == protocol.UndoReverted {
					a.Raw = true
				} else {
					r.Outcome, r.Reason = protocol.UndoLeft, "protected path: only its content at the turn's start is put back"
					write = false
				}
			}
			if write {
				actions = append(actions, a)
			}
		}
		byPath[c.Path] = len(results)
		results = append(results, r)
	}
	// A rename is taken back whole or not at all.
	for to, from := range renamed {
		i, ok1 := byPath[to]
		j, ok2 := byPath[from]
		if !ok1 || !ok2 {
			continue
		}
		left := func(k int) bool {
			o := results[k].Outcome
			return o == protocol.UndoLeft || o == protocol.UndoNotRestorable
		}
		if left(i) && !left(j) {
			results[j].Outcome, results[j].Reason = protocol.UndoLeft, "renamed to "+to+", which changed after the turn"
		} else if left(j) && !left(i) {
			results[i].Outcome, results[i].Reason = protocol.UndoLeft, "renamed from "+from+", which changed after the turn"
		}
	}
	kept := actions[:0]
	for _, a := range actions {
		if o := results[a.Result].Outcome; o == protocol.UndoReverted || o == protocol.UndoMerged {
			kept = append(kept, a)
		}
	}
	actions = kept
	sortActions(actions)
	return actions, results, merged
}

// sortActions orders writes: directories made (shallowest first), then
// files and links, then directories removed (deepest first), so each
// directory exists before what goes in it and is empty when removed.
func sortActions(actions []action) {
	rank := actionRank
	sort.SliceStable(actions, func(i, j int) bool {
		ri, rj := rank(actions[i]), rank(actions[j])
		if ri != rj {
			return ri < rj
		}
		di, dj := strings.Count(actions[i].Path, "/"), strings.Count(actions[j].Path, "/")
		if ri == 2 {
			return di > dj
		}
		return di < dj
	})
}

// actionRank orders an action: 0 a directory made, 1 a file or link, 2 a
// directory removed.
func actionRank(a action) int {
	switch {
	case a.Post != nil && a.Post.Type == TypeDir:
		return 0
	case a.Pre != nil && a.Pre.Type == TypeDir:
		// A directory removed, or replaced by a file: once emptied.
		return 2
	}
	return 1
}

func isText3(a, b, c *Entry) bool {
	for _, e := range []*Entry{a, b, c} {
		if e == nil || e.Type != TypeFile || e.Big {
			return false
		}
	}
	return true
}

// merge3 takes the turn's change out of a file changed since: base the
// turn's end state, ours the file now, theirs the turn's start state.
func (e *Engine) merge3(c Change, cur *Entry, r protocol.UndoFileResult, merged *[]blobstore.Blob) (*Entry, protocol.UndoFileResult) {
	get := func(en *Entry) ([]byte, error) { return e.cfg.Blobs.Get([32]byte(en.Hash)) }
	base, err1 := get(c.New)
	ours, err2 := get(cur)
	theirs, err3 := get(c.Old)
	if err := errors.Join(err1, err2, err3); err != nil {
		r.Outcome, r.Reason = protocol.UndoNotRestorable, "a recorded content is missing: "+err.Error()
		return nil, r
	}
	mode := cur.Mode
	if cur.Mode == c.New.Mode {
		mode = c.Old.Mode
	}
	var out []byte
	if c.Old.Hash == c.New.Hash {
		out = ours // the turn changed only the mode
	} else {
		if merge.IsBinary(base) || merge.IsBinary(ours) || merge.IsBinary(theirs) {
			r.Outcome, r.Reason = protocol.UndoLeft, "binary file changed after the turn"
			return nil, r
		}
		m := merge.Merge3(base, ours, theirs)
		if !m.Clean {
			r.Outcome, r.Reason = protocol.UndoLeft, "changed after the turn where the turn changed it"
			for i, cf := range m.Conflicts {
				if i == maxHunks {
					break
				}
				r.Hunks = append(r.Hunks, protocol.UndoHunk{BaseStart: cf.BaseStart + 1, BaseEnd: cf.BaseEnd,
					Base: bound(cf.Base), Ours: bound(cf.Ours), Theirs: bound(cf.Theirs)})
			}
			return nil, r
		}
		out = m.Merged
	}
	h := sha256.Sum256(out)
	post := &Entry{Type: TypeFile, Mode: mode, Size: int64(len(out)), Hash: Hash(h)}
	if sameState(post, cur) {
		r.Outcome = protocol.UndoUnchanged
		return nil, r
	}
	*merged = append(*merged, blobstore.Blob{Hash: h, Data: out})
	r.Outcome = protocol.UndoMerged
	return post, r
}

func bound(b []byte) string {
	if len(b) > maxHunkBytes {
		b = b[:maxHunkBytes]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// apply performs op's actions. Each checks the path first: already as
// planned (a restart finishing the operation), it is skipped; changed
// since the plan, it is left and reported.
func (e *Engine) apply(op *opRecord) {
	one := func(a action) {
		failpoint.Hit(FailpointUndoFile)
		if err := e.applyOne(op.Root, a); err != nil {
			e.resultMu.Lock()
			r := &op.Results[a.Result]
			r.Outcome = protocol.UndoLeft
			r.Reason = err.Error()
			e.resultMu.Unlock()
		}
	}
	// Directories are made before and removed after the files, in order;
	// the files are written by a few workers at once, since each waits
	// for its fsyncs and the disk takes several together.
	var files []action
	for _, a := range op.Actions {
		if actionRank(a) == 1 {
			files = append(files, a)
		}
	}
	for _, a := range op.Actions {
		if actionRank(a) == 0 {
			one(a)
		}
	}
	work := make(chan action)
	var wg sync.WaitGroup
	for range min(applyWorkers, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				one(a)
			}
		}()
	}
	for _, a := range files {
		work <- a
	}
	close(work)
	wg.Wait()
	for _, a := range op.Actions {
		if actionRank(a) == 2 {
			one(a)
		}
	}
}

// applyWorkers write an operation's files at once.
const applyWorkers = 8

// errChanged: the path is neither as planned against nor as the action
// leaves it.
var errChanged = errors.New("changed while the undo ran; left as it is")

func (e *Engine) applyOne(root string, a action) error {
	abs := filepath.Join(root, filepath.FromSlash(a.Path))
	now, err := readEntry(abs, e.cfg.MaxFileBytes)
	if err != nil {
		return err
	}
	if sameState(now, a.Post) {
		return nil
	}
	if !sameState(now, a.Pre) && !(a.Pre != nil && a.Pre.Type == TypeDir && now != nil && now.Type == TypeDir) {
		return errChanged
	}
	acc := e.access()
	fsys := acc.fs
	if a.Raw {
		fsys = acc.raw
	}
	fsys = fsys.Within(root)
	switch {
	case a.Post == nil && now == nil:
		return nil
	case a.Post == nil && now.Type == TypeDir:
		if len(fsys.RemoveEmptyDirs([]string{abs})) == 0 {
			return errors.New("directory not empty: files were added to it after the turn")
		}
		return nil
	case a.Post == nil:
		return removeFile(fsys, abs)
	case a.Post.Type == TypeDir:
		if now != nil && now.Type != TypeDir {
			// The turn put a file where a directory was.
			if err := removeFile(fsys, abs); err != nil {
				return err
			}
		}
		_, err := fsys.MkdirAll(abs)
		return err
	case now != nil && now.Type == TypeDir:
		// The turn put a directory where a file was: it goes once empty.
		if len(fsys.RemoveEmptyDirs([]string{abs})) == 0 {
			return errors.New("directory not empty: files were added to it after the turn")
		}
	}
	if _, err := fsys.MkdirFor(abs); err != nil {
		return err
	}
	d, name, err := fsys.OpenParent(abs)
	if err != nil {
		return err
	}
	defer d.Close()
	if a.Post.Type == TypeSymlink {
		if err := d.Symlink(a.Post.Link, name); err != nil {
			return err
		}
		return d.Sync()
	}
	data, err := e.cfg.Blobs.Get([32]byte(a.Post.Hash))
	if err != nil {
		return fmt.Errorf("reading the recorded content: %w", err)
	}
	perm := fs.FileMode(a.Post.Mode) & fs.ModePerm
	if _, err := atomicfile.Write(d, name, atomicfile.Options{Mode: atomicfile.Replace, Perm: perm, Tag: undoTempTag},
		func(wr io.Writer) error { _, err := wr.Write(data); return err }); err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		return err
	}
	// An existing file keeps its bits through atomicfile: set the
	// recorded ones.
	return d.Chmod(name, perm)
}

// removeFile removes the file or link abs and makes that durable.
func removeFile(fsys *confine.FS, abs string) error {
	d, name, err := fsys.OpenParent(abs)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(name); err != nil {
		return err
	}
	return d.Sync()
}

// readEntry describes the path now, hashing a file's content.
func readEntry(abs string, maxFile int64) (*Entry, error) {
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil, nil
		}
		return nil, err
	}
	e := &Entry{Mode: uint32(st.Mode & 0o7777), Size: st.Size}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Type, e.Size = TypeDir, 0
	case unix.S_IFLNK:
		e.Type, e.Size = TypeSymlink, 0
		l, err := os.Readlink(abs)
		if err != nil {
			return nil, err
		}
		e.Link = l
	case unix.S_IFREG:
		e.Type = TypeFile
		if st.Size > maxFile {
			e.Big = true
			return e, nil
		}
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), abs)
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, io.LimitReader(f, maxFile+1))
		if err != nil {
			return nil, err
		}
		e.Size = n
		e.Hash = Hash(h.Sum(nil))
	default:
		return nil, fmt.Errorf("%s is a special file", abs)
	}
	return e, nil
}

// finish records op done and the turn's new state, in one commit.
func (e *Engine) finish(op *opRecord) error {
	op.State = opDone
	t, err := e.getTurn(op.Turn)
	if err != nil {
		return err
	}
	t.LastOp = op.ID
	puts := []store.Put{putJSON(bucketOps, op.ID, op)}
	if op.Kind == opUndo {
		t.State = protocol.TurnUndone
	} else {
		t.State = protocol.TurnEnded
		if of, err := e.getOp(op.Of); err == nil {
			of.RedoneBy = op.ID
			puts = append(puts, putJSON(bucketOps, of.ID, of))
		}
	}
	puts = append(puts, putJSON(bucketTurns, t.ID, t))
	if err := e.cfg.Store.PutKVs(puts...); err != nil {
		return ioErr("recording the operation", err)
	}
	return nil
}

func (e *Engine) getOp(id string) (*opRecord, error) {
	var op opRecord
	found, err := getJSON(e.cfg.Store, bucketOps, []byte(id), &op)
	if err != nil {
		return nil, ioErr("reading the operation", err)
	}
	if !found {
		return nil, protocol.Errorf(protocol.CodeTurnNotFound, protocol.ReasonOperationNotFound,
			"no undo has the operation id %s", id)
	}
	return &op, nil
}

// lastTurn is the workspace's newest ended turn not undone.
func (e *Engine) lastTurn(root string) (*turnRecord, error) {
	real, err := e.resolve(root)
	if err != nil {
		return nil, err
	}
	var found *turnRecord
	err = e.cfg.Store.ScanKVReverse(bucketTurns, nil, func(k, v []byte) (bool, error) {
		var t turnRecord
		if err := json.Unmarshal(v, &t); err != nil {
			return false, err
		}
		if t.Root == real && t.State == protocol.TurnEnded {
			found = &t
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, ioErr("listing turns", err)
	}
	if found == nil {
		return nil, protocol.Errorf(protocol.CodeTurnNotFound, protocol.ReasonTurnNotFound,
			"%s has no ended turn left to undo", real)
	}
	return found, nil
}

// lastUndo is the workspace's newest undo not redone.
func (e *Engine) lastUndo(root string) (*opRecord, error) {
	real, err := e.resolve(root)
	if err != nil {
		return nil, err
	}
	var found *opRecord
	err = e.cfg.Store.ScanKVReverse(bucketOps, nil, func(k, v []byte) (bool, error) {
		var op opRecord
		if err := json.Unmarshal(v, &op); err != nil {
			return false, err
		}
		if op.Root == real && op.Kind == opUndo && op.RedoneBy == "" && op.State == opDone {
			found = &op
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, ioErr("listing operations", err)
	}
	if found == nil {
		return nil, protocol.Errorf(protocol.CodeTurnNotFound, protocol.ReasonOperationNotFound,
			"%s has no undo left to redo", real)
	}
	return found, nil
}

// cleanTemp removes the temp files a killed operation left in the
// directories it was writing.
func (e *Engine) cleanTemp(op *opRecord) {
	acc := e.access()
	fsys := acc.raw
	if fsys == nil {
		fsys = acc.fs
	}
	fsys = fsys.Within(op.Root)
	dirs := map[string]bool{}
	for _, a := range op.Actions {
		dirs[filepath.Dir(filepath.Join(op.Root, filepath.FromSlash(a.Path)))] = true
	}
	for dir := range dirs {
		d, err := fsys.OpenDir(dir)
		if err != nil {
			continue
		}
		for _, tag := range []string{undoTempTag, "link"} {
			if removed, err := atomicfile.CleanTemp(d, tag); err != nil || len(removed) > 0 {
				e.cfg.Logger.Info("checkpoints: removed an interrupted operation's temp files", "dir", dir, "files", removed, "err", err)
			}
		}
		d.Close()
	}
}

// undoTempTag marks the temp files of undos and redos.
const undoTempTag = "undo"

// recover finishes every operation a crash interrupted: each action is
// applied where the path is still as planned against, skipped where it is
// already done. Then the workspaces with an open turn are registered, so
// sessions' writes are attributed to them.
func (e *Engine) recover() error {
	var pending []*opRecord
	err := e.cfg.Store.ScanKV(bucketOps, nil, func(k, v []byte) (bool, error) {
		var op opRecord
		if err := json.Unmarshal(v, &op); err != nil {
			return false, err
		}
		if op.State == opApplying {
			pending = append(pending, &op)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("checkpoints: reading operations: %w", err)
	}
	for _, op := range pending {
		e.cfg.Logger.Info("checkpoints: finishing an interrupted operation", "operation", op.ID, "kind", op.Kind, "turn", op.Turn)
		e.cleanTemp(op)
		e.apply(op)
		if err := e.finish(op); err != nil {
			return err
		}
	}
	var open []string
	err = e.cfg.Store.ScanKV(bucketWorkspaces, nil, func(k, v []byte) (bool, error) {
		var rec wsRecord
		if json.Unmarshal(v, &rec) == nil && rec.OpenTurn != "" {
			open = append(open, rec.Root)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, root := range open {
		if _, err := e.workspace(root); err != nil {
			return err
		}
	}
	return nil
}
