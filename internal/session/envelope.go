package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/internal/newfile"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/protocol"
)

// A "*** Begin Patch" envelope streamed into an edit session names its own
// files: it may add, update, delete and move several. So may Aider's
// search/replace blocks, each under a line naming its file, and an empty
// SEARCH section creates a file. Their paths resolve against the session's
// workspace_root, or, without one, against the directory the model names
// paths from: the target's, or the one above it that the model's path for
// the target implies ("src/app.go" for /w/src/app.go names paths from /w).
// Each is checked by the path guard like a target and, when the session
// has a workspace root, must resolve inside that workspace: a move to
// ~/.local/bin/git from a project is refused as outside_workspace, like a
// target there. The whole edit is applied as one transaction, each file
// written through the workspace (confine.FS.Within).

// envelopePlan is an envelope applied in memory, ready to commit.
type envelopePlan struct {
	edit    *protocol.EditResult
	changes []fileChange
	files   []protocol.FileChange
	diff    bytes.Buffer
	// errs are the files validation refused.
	errs []protocol.FileError
	// targetOld is the session's target as the plan read it; targetDiff
	// is where diff holds the diff of its update.
	targetOld  []byte
	targetDiff [2]int
}

// isEnvelope reads an edit session's content and reports whether it is
// applied as a multi-file edit (a transaction, planEnvelope): a Begin Patch
// envelope, or search/replace blocks that name a file other than the
// target, or that create the target. Other edits change the target alone,
// on the single-file path.
func (m *Manager) isEnvelope(r *record) (bool, []byte, error) {
	if r.Operation != protocol.OpEdit || r.contentBytes() > m.cfg.ValidateMaxBytes {
		return false, nil, nil
	}
	var buf bytes.Buffer
	for _, s := range r.segments() {
		if _, err := m.cfg.Store.CopyRange(s.ID, &buf, 0, s.Bytes); err != nil {
			return false, nil, ioError(r.ID, "reading the journal", err)
		}
	}
	content := buf.Bytes()
	switch edit.Detect(content) {
	case edit.FormatEnvelope:
		return true, content, nil
	case edit.FormatSearchReplace:
	default:
		return false, content, nil
	}
	named := edit.NamedFiles(content)
	root := m.editRoot(r, named)
	for _, p := range named {
		abs, err := m.resolveEdit(r, p, root)
		if err != nil || abs != r.Target {
			// planEnvelope reports a path the guard refuses, per file.
			return true, content, nil
		}
	}
	now, err := m.statTarget(m.fs(), r.Target)
	if err != nil {
		return false, nil, confinedError(r.ID, "reading the current target", err)
	}
	// A missing target is created by blocks whose SEARCH sections are all
	// empty; any other edit of it fails on the single-file path with
	// target_missing, as before.
	return !now.exists && edit.CreatesFile(content), content, nil
}

// editRoot is the directory an edit's relative paths resolve against: the
// session's workspace_root, else the directory that the model's own path
// for the target implies, else the target's directory.
func (m *Manager) editRoot(r *record, named []string) string {
	if r.WorkspaceRoot != "" {
		return r.WorkspaceRoot
	}
	sep := string(filepath.Separator)
	for _, p := range named {
		if filepath.IsAbs(p) {
			continue
		}
		rel := filepath.Clean(filepath.FromSlash(p))
		if rel == "." || strings.HasPrefix(rel, "..") || !strings.HasSuffix(r.Target, sep+rel) {
			continue
		}
		root := strings.TrimSuffix(r.Target, sep+rel)
		if root == "" {
			root = sep
		}
		// An implied root the guard refuses (outside the allowed roots)
		// would refuse every path; the target's directory is then the
		// better guess.
		if abs, err := m.guard().ResolveFrom(rel, root); err == nil && abs == r.Target {
			return root
		}
	}
	return filepath.Dir(r.Target)
}

// resolveEdit resolves a path an edit names, from root (editRoot): confined
// to the session's workspace when it has one, as resolved now and as it
// was resolved at begin (a workspace symlink changed since does not move
// the session).
func (m *Manager) resolveEdit(r *record, p, root string) (string, error) {
	if r.WorkspaceRoot == "" {
		return m.guard().ResolveFrom(p, root)
	}
	abs, err := m.guard().Resolve(p, r.WorkspaceRoot)
	if err == nil && r.Workspace != "" && !pathguard.Within(r.Workspace, abs) {
		return "", pathguard.OutsideWorkspace(p, abs, r.Workspace)
	}
	return abs, err
}

// planEnvelope applies the envelope to the files as they are now and
// validates every file it would leave. A non-nil base stands for the
// session's target as it was at begin (mergeEnvelopeOnBase).
func (m *Manager) planEnvelope(r *record, content, base []byte) (*envelopePlan, error) {
	root := m.editRoot(r, edit.NamedFiles(content))
	resolved := map[string]string{}
	var pathErr error
	read := func(p string) ([]byte, bool, error) {
		abs, err := m.resolveEdit(r, p, root)
		if err != nil {
			pathErr = pathError(err)
			return nil, false, pathErr
		}
		resolved[p] = abs
		if base != nil && abs == r.Target {
			return base, true, nil
		}
		data, ok, err := m.readTarget(m.fsOf(r), abs)
		if err != nil {
			if pe := confinedError(r.ID, "reading "+abs, err); pe.Data.Reason != protocol.ReasonIO {
				pathErr = pe
			}
		}
		return data, ok, err
	}
	same := func(a, b string) bool {
		ra, erra := m.resolveEdit(r, a, root)
		rb, errb := m.resolveEdit(r, b, root)
		return erra == nil && errb == nil && ra == rb
	}
	charsetOf := func(p string) edit.Charset {
		if abs, ok := resolved[p]; ok {
			return m.charsetOf(r, abs)
		}
		return edit.Charset{}
	}
	res, err := edit.ApplyFilesAs(content, r.Target, read, same, charsetOf)
	plan := &envelopePlan{edit: &protocol.EditResult{}}
	if cerr := convert(res, plan.edit); cerr != nil {
		return nil, ioError(r.ID, "encoding the edit result", cerr)
	}
	if plan.edit.Blocks == nil {
		plan.edit.Blocks = []protocol.EditBlock{}
	}
	if pathErr != nil {
		return nil, pathErr
	}
	if err != nil {
		pe := protocol.Errorf(protocol.CodeEditFailed, protocol.ReasonEditFailed, "%s: %v", r.Target, err)
		if errors.Is(err, edit.ErrUnsupportedEncoding) {
			pe.Data.Reason = protocol.ReasonUnsupportedEncoding
		}
		pe.Data.SessionID = r.ID
		pe.Data.Edit = plan.edit
		return plan, pe
	}

	add := func(c fileChange, content []byte) {
		c.SessionID, c.Workspace = r.ID, m.workspaceOf(r)
		// A created file has no backup, but what it was written with is
		// kept under this id for a three-way undo.
		c.BackupID = r.ID + "#" + strconv.Itoa(len(plan.changes))
		if content != nil {
			body := content
			c.fill = func(w io.Writer) error { _, err := w.Write(body); return err }
			c.content = body
		}
		plan.changes = append(plan.changes, c)
	}
	for _, op := range res.Files {
		path := resolved[op.Path]
		old := op.Old
		if path == r.Target && op.Kind != edit.OpAdd {
			plan.targetOld = old
		}
		// written is what the file will hold; op.Content is the text the
		// edit made, which validation and the diff read.
		written := op.Content
		dest := path
		switch op.Kind {
		case edit.OpAdd:
			if op.Replaced {
				// Codex's Add File over an existing file replaces it; the
				// old content is backed up, so undo restores it.
				add(fileChange{Path: path, Kind: changeWrite, OldExists: true, OldSHA256: sha(op.ReplacedOld)}, op.Content)
				old = op.ReplacedOld
			} else {
				// A new file takes the form the project names for it, as
				// a session's new file does: a UTF-16 working-tree-encoding
				// written as UTF-8 reads as garbage to git.
				styled, _, serr := newfile.Apply(op.Content, m.styleOf(r, path))
				if serr != nil {
					pe := encodingError(r, serr)
					pe.Data.Path = path
					return nil, pe
				}
				written = styled
				add(fileChange{Path: path, Kind: changeCreate}, written)
			}
		case edit.OpUpdate:
			add(fileChange{Path: path, Kind: changeWrite, OldExists: true, OldSHA256: sha(old)}, op.Content)
		case edit.OpDelete:
			add(fileChange{Path: path, Kind: changeDelete, OldExists: true, OldSHA256: sha(old)}, nil)
			written = nil
		case edit.OpMove:
			dest = resolved[op.MoveTo]
			if op.Replaced {
				// Codex's Move to onto an existing file replaces it,
				// backed up like any replaced file.
				add(fileChange{Path: dest, Kind: changeWrite, OldExists: true, OldSHA256: sha(op.ReplacedOld)}, op.Content)
			} else {
				add(fileChange{Path: dest, Kind: changeCreate, MovedFrom: path}, op.Content)
			}
			add(fileChange{Path: path, Kind: changeDelete, OldExists: true, OldSHA256: sha(old)}, nil)
		}
		fc := protocol.FileChange{Kind: string(op.Kind), TargetFile: path, Bytes: int64(len(written))}
		if op.Kind == edit.OpMove {
			fc.MovedTo = dest
		}
		if op.Kind != edit.OpDelete {
			fc.SHA256 = sha(written)
			text, oldText := m.textOf(r, dest, op.Content, old)
			v, err := m.validateFile(r, dest, text, oldText, op.Kind != edit.OpAdd || op.Replaced)
			if err != nil {
				return nil, ioError(r.ID, "encoding the validation result", err)
			}
			fc.Validation = v
			if v.Blocked {
				plan.errs = append(plan.errs, protocol.FileError{SessionID: r.ID, TargetFile: dest,
					Code: protocol.CodeValidationFailed, Reason: protocol.ReasonValidationFailed, Message: v.Summary, Validation: v})
			}
		}
		plan.files = append(plan.files, fc)
		after := op.Content
		if op.Kind == edit.OpDelete {
			after = nil
		}
		if op.Kind == edit.OpMove {
			plan.diff.WriteString(validate.Diff(path, old, nil))
			plan.diff.WriteString(validate.Diff(dest, op.ReplacedOld, after))
		} else {
			from := plan.diff.Len()
			oldText, afterText := old, after
			if old != nil && after != nil {
				// A person reads the diff as text, whatever the encoding.
				afterText, oldText = m.textOf(r, path, after, old)
			}
			plan.diff.WriteString(validate.Diff(path, oldText, afterText))
			if path == r.Target {
				plan.targetDiff = [2]int{from, plan.diff.Len()}
			}
		}
	}
	return plan, nil
}

// finalizeEnvelope applies an envelope session as one transaction; with
// dryRun it returns the diff of every file and writes nothing.
func (m *Manager) finalizeEnvelope(e *entry, content []byte, force, dryRun bool) (protocol.FinalizeResult, error) {
	r := &e.rec
	var change *targetChange
	if !force {
		// An envelope's hunks are found by their context in the files as
		// they are now, so a target changed since begin is edited as it
		// is, where each hunk still matches exactly once. A dry run shows
		// what a finalize would do, refusing nothing.
		var err error
		if change, err = m.changedSince(r); err != nil {
			if !dryRun {
				return protocol.FinalizeResult{}, err
			}
			change = nil
		}
	}
	plan, err := m.planEnvelope(r, content, nil)
	if pe, ok := err.(*protocol.Error); ok && pe.Code == protocol.CodeEditFailed && change != nil {
		// Written against the target at begin, the envelope may apply
		// there: its result for the target is merged with the change.
		onBase, ok, merr := m.mergeEnvelopeOnBase(r, content, change)
		mpe, isPE := merr.(*protocol.Error)
		switch {
		case isPE && dryRun:
			return protocol.FinalizeResult{SessionID: r.ID, Stage: r.Stage, TargetFile: r.Target, Operation: r.Operation,
				DryRun: true, Edit: plan.edit, Warnings: []protocol.Warning{{Code: mpe.Data.Reason, Message: mpe.Message}}}, nil
		case merr != nil:
			return protocol.FinalizeResult{}, merr
		case ok:
			plan, err = onBase, nil
		}
	}
	if pe, ok := err.(*protocol.Error); ok && pe.Code == protocol.CodeEditFailed {
		if dryRun {
			return protocol.FinalizeResult{SessionID: r.ID, Stage: r.Stage, TargetFile: r.Target, Operation: r.Operation,
				DryRun: true, Edit: plan.edit, Warnings: []protocol.Warning{{Code: pe.Data.Reason, Message: pe.Message}}}, nil
		}
		return protocol.FinalizeResult{}, m.refuseEdit(e, pe, plan.edit)
	}
	if err != nil {
		return protocol.FinalizeResult{}, err
	}
	res := protocol.FinalizeResult{
		SessionID: r.ID, Stage: r.Stage, TargetFile: r.Target, Operation: r.Operation,
		EndMarkerSeen: r.Scanner.MarkerSeen(), TrailingBytes: r.Scanner.TrailingLen(),
		Attempt: r.attempt(), Edit: plan.edit, Files: plan.files, Bytes: int64(len(content)),
	}
	for _, b := range plan.edit.Blocks {
		res.ElisionsMerged += b.ElisionsMerged
	}
	if dryRun {
		res.DryRun, res.Diff = true, plan.diff.String()
		if change != nil {
			res.Merged = true
			res.MergedHunks = hunksOf(m.changesSinceBegin(r, plan.targetOld))
		}
		return res, nil
	}
	if len(plan.errs) > 0 {
		v := plan.errs[0].Validation
		err := m.refuse(e, v)
		if pe, ok := err.(*protocol.Error); ok {
			pe.Message = fmt.Sprintf("%s: %s", plan.errs[0].TargetFile, pe.Message)
			pe.Data.Files = plan.errs
		}
		return protocol.FinalizeResult{}, err
	}
	if len(plan.changes) == 0 {
		// Every part was already in place: nothing is written.
		res.Stage, res.NothingWritten = protocol.StageCompleted, true
		return m.complete(e, res), nil
	}
	tx := &txRecord{ID: r.ID, Stage: protocol.TxOpen, Sessions: []string{r.ID}, Edit: true, CreatedAt: m.cfg.Clock.Now()}
	m.unwatch(e)
	if err := m.applyChanges(tx, plan.changes); err != nil {
		m.watch(e)
		// A failed multi-file edit's record is of no more use; its
		// session (or the undone one) stays as it was.
		m.dropTx(tx.ID)
		if pe, ok := err.(*protocol.Error); ok {
			pe.Data.SessionID = r.ID
		}
		return protocol.FinalizeResult{}, err
	}
	for _, c := range plan.changes {
		if c.Path == r.Target && c.Kind != changeDelete {
			res.FileBytes, res.FileSHA256 = c.NewBytes, c.NewSHA256
			res.Mode = fmt.Sprintf("%#o", c.NewMode)
		}
		if c.BackupPieces > 0 {
			res.BackupID = r.ID
		}
		res.CreatedDirs = append(res.CreatedDirs, c.CreatedDirs...)
	}
	res.Stage = protocol.StageCompleted
	if change != nil {
		res.Merged = true
		res.MergedHunks = hunksOf(m.changesSinceBegin(r, plan.targetOld))
	}
	if err := m.settleTx(tx, []protocol.FinalizeResult{res}, m.changeAfters(tx.Files, plan.changes)...); err != nil {
		m.watch(e)
		return protocol.FinalizeResult{}, err
	}
	r.Changes = tx.Files
	res = m.complete(e, res)
	m.dropTx(tx.ID)
	return res, nil
}

// mergeEnvelopeOnBase is mergeFailedEdit for an envelope that fails on
// the files as they are now: applied with the session's target as it was
// at begin (the other files as they are), its result for the target is
// merged three-way with the target now. ok is false where that cannot be
// done: no base kept, the envelope fails there too, or it does more to
// the target than update it in place.
func (m *Manager) mergeEnvelopeOnBase(r *record, content []byte, ch *targetChange) (*envelopePlan, bool, error) {
	if r.BasePieces == 0 || ch.now.size > mergeMaxBytes {
		return nil, false, nil
	}
	base, err := m.readBase(r)
	if err != nil || sum(base) != r.BaseSHA256 {
		return nil, false, nil
	}
	plan, err := m.planEnvelope(r, content, base)
	if err != nil {
		return nil, false, nil
	}
	i := slices.IndexFunc(plan.changes, func(c fileChange) bool { return c.Path == r.Target })
	if i < 0 || plan.changes[i].Kind != changeWrite || plan.changes[i].MovedFrom != "" ||
		slices.ContainsFunc(plan.changes, func(c fileChange) bool { return c.MovedFrom == r.Target }) {
		return nil, false, nil
	}
	now, exists, err := m.readForMerge(m.fsOf(r), r.Target)
	if err != nil {
		return nil, true, confinedError(r.ID, "reading the current target", err)
	}
	if !exists {
		return nil, true, changedError(r, ch.now)
	}
	mr := m.merge3(r, r.Target, base, now, plan.changes[i].content)
	if !mr.Clean {
		return nil, true, mergeRefused(r, "session "+r.ID+" began", mr.Conflicts, true, r.BaseSHA256, sum(now))
	}
	c := &plan.changes[i]
	c.content, c.fill, c.OldSHA256 = mr.Merged, fillWith(mr.Merged), sha(now)
	plan.targetOld = now
	if d := plan.targetDiff; d[1] > d[0] {
		// The dry run's diff of the target: from the file now.
		whole := plan.diff.String()
		plan.diff.Reset()
		plan.diff.WriteString(whole[:d[0]])
		mergedText, nowText := m.textOf(r, r.Target, mr.Merged, now)
		plan.diff.WriteString(validate.Diff(r.Target, nowText, mergedText))
		plan.diff.WriteString(whole[d[1]:])
	}
	for j := range plan.files {
		if plan.files[j].TargetFile != r.Target {
			continue
		}
		v, err := m.validateFile(r, r.Target, mr.Merged, now, true)
		if err != nil {
			return nil, true, ioError(r.ID, "encoding the validation result", err)
		}
		plan.files[j].Validation, plan.files[j].SHA256, plan.files[j].Bytes = v, sha(mr.Merged), int64(len(mr.Merged))
		plan.errs = slices.DeleteFunc(plan.errs, func(fe protocol.FileError) bool { return fe.TargetFile == r.Target })
		if v.Blocked {
			plan.errs = append(plan.errs, protocol.FileError{SessionID: r.ID, TargetFile: r.Target,
				Code: protocol.CodeValidationFailed, Reason: protocol.ReasonValidationFailed, Message: v.Summary, Validation: v})
		}
	}
	return plan, true, nil
}

// refuseEdit keeps an edit that did not apply, like refused content, for a
// corrected attempt.
func (m *Manager) refuseEdit(e *entry, pe *protocol.Error, res *protocol.EditResult) error {
	r := &e.rec
	r.Stage = protocol.StageNeedsCorrections
	r.UpdatedAt = m.cfg.Clock.Now()
	if err := m.put(r); err != nil {
		return err
	}
	m.stopTimers(e)
	m.traceStage(r, trace.Any("edit", res))
	pe.Data.Next = fmt.Sprintf("Resend the whole edit, with the failed parts fixed, in a new session with supersedes=%s.", r.ID)
	pe.Message = sentence(pe.Message) + " " + pe.Data.Next
	pe.Data.Attempt, pe.Data.MaxAttempts = r.attempt(), m.cfg.MaxAttempts
	return pe
}

// undoChanges restores every file a multi-file edit changed, as one
// transaction, by the rules of undo.go: a file changed since has only the
// edit's own change reverted, or nothing is undone.
func (m *Manager) undoChanges(r *record) (protocol.UndoResult, error) {
	res := protocol.UndoResult{SessionID: r.ID, TargetFile: r.Target}
	// A moved file edited since goes back to where it was with the
	// edits: the content its old path gets back, by that path.
	back := map[string][]byte{}
	for _, c := range r.Changes {
		if c.MovedFrom == "" || c.Kind != changeCreate {
			continue
		}
		src := slices.IndexFunc(r.Changes, func(s fileChange) bool { return s.Path == c.MovedFrom && s.Kind == changeDelete })
		now, err := m.statTarget(m.fs(), c.Path)
		if err != nil {
			return res, confinedError(r.ID, "reading "+c.Path, err)
		}
		if src < 0 || !now.exists || c.isNew(now) {
			continue
		}
		content, kept, err := m.moveBack(r, c, r.Changes[src], now)
		if err != nil {
			return res, err
		}
		back[c.MovedFrom] = content
		res.Merged = true
		res.MergedHunks = append(res.MergedHunks, hunksOf(kept)...)
	}
	undo := make([]fileChange, 0, len(r.Changes))
	targetUnchanged := false
	for i := len(r.Changes) - 1; i >= 0; i-- {
		c := r.Changes[i]
		now, err := m.statTarget(m.fs(), c.Path)
		if err != nil {
			return res, confinedError(r.ID, "reading "+c.Path, err)
		}
		u := fileChange{Path: c.Path, SessionID: r.ID, OldExists: now.exists, OldSHA256: now.sha256}
		if u.OldExists {
			u.BackupID = r.ID + "-undo#" + strconv.Itoa(len(undo))
		}
		switch c.Kind {
		case changeDelete:
			content, moved := back[c.Path]
			switch {
			case moved:
				u.Kind, u.fill = changeCreate, fillWith(content)
			case !now.exists:
				u.Kind, u.fill = changeCreate, m.backupFill(c.BackupID, c.BackupPieces)
			case now.sha256 == c.OldSHA256:
				// Put back already, as it was.
				targetUnchanged = targetUnchanged || c.Path == r.Target
				continue
			default:
				return res, m.deletedRecreated(r.ID, c, now)
			}
		case changeCreate:
			_, moved := back[c.MovedFrom]
			switch {
			case c.isNew(now) || moved && c.MovedFrom != "":
				u.Kind = changeDelete
			case !now.exists:
				// Deleted since: nothing of it is left to remove.
				targetUnchanged = targetUnchanged || c.Path == r.Target
				continue
			default:
				return res, m.createdChanged(r, c.Path, c.NewSHA256, afterKey(c.BackupID), c.AfterPieces, now)
			}
		default:
			if c.isNew(now) {
				u.Kind, u.fill = changeWrite, m.backupFill(c.BackupID, c.BackupPieces)
				break
			}
			// Changed since: this file's own change is reverted
			// three-way, keeping the later one, or nothing is undone.
			merged, err := m.revertChange(r, c, now)
			if err != nil {
				return res, err
			}
			u.Kind, u.fill = changeWrite, fillWith(merged)
			res.Merged = true
		}
		undo = append(undo, u)
	}
	tx := &txRecord{ID: r.ID + "-undo", Undoes: r.ID, Sessions: []string{r.ID}, Stage: protocol.TxOpen, CreatedAt: m.cfg.Clock.Now()}
	if len(undo) > 0 {
		if err := m.applyUndo(tx, undo); err != nil {
			if pe, ok := err.(*protocol.Error); ok {
				pe.Data.TxID, pe.Data.SessionID = "", r.ID
			}
			return res, err
		}
	}
	for i := len(r.Changes) - 1; i >= 0; i-- {
		res.RemovedDirs = append(res.RemovedDirs, m.fs().RemoveEmptyDirs(r.Changes[i].CreatedDirs)...)
	}
	for _, u := range tx.Files {
		m.dropBackup(u.BackupID, u.BackupPieces)
		if u.Path == r.Target {
			res.Removed = u.Kind == changeDelete
			res.RestoredBytes, res.SHA256 = u.NewBytes, u.NewSHA256
		}
	}
	res.Unchanged = targetUnchanged
	return res, nil
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
