package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// A session whose target someone else changed while it streamed is merged
// with that change instead of being refused, and an undo after a later
// edit reverts only the session's own change. Both are three-way merges
// (internal/merge) and need a content the file no longer holds: the
// target at begin (the base of a finalize's merge), and what the session
// wrote (the base of an undo's). Both are kept in the backups bucket,
// beside the undo backup, for files up to mergeMaxBytes, which are merged
// in memory; a larger file is refused as before, never merged blind.
const mergeMaxBytes = 4 << 20

// maxMergePieces bounds the backup pieces read whole for a merge: a file
// the session replaced may be far larger than what it wrote.
const maxMergePieces = mergeMaxBytes/backupPiece + 1

// baseKey and afterKey name the backups of a session's target at begin
// and of what it wrote.
func baseKey(id string) string  { return id + "~base" }
func afterKey(id string) string { return id + "~after" }

// checkExpected refuses a session whose target is not the content the
// writer based its change on (expected_sha256), before anything is
// journaled or written. The hash of the file's text counts as well as
// that of its bytes: a writer that read the file through a tool that
// showed CRLF as LF, or hid a UTF-8 byte order mark, read the same
// content (and the write keeps the file's endings and mark).
func (m *Manager) checkExpected(expected string, now targetState, target string) error {
	if expected == "" {
		return nil
	}
	actual := protocol.AbsentSHA256
	if now.exists {
		actual = now.sha256
	}
	if actual == expected {
		return nil
	}
	if now.exists && now.size <= mergeMaxBytes {
		if data, ok, err := m.readForMerge(m.fs(), target); err == nil && ok && sum(data) == now.sha256 && sum(textForm(data)) == expected {
			return nil
		}
	}
	pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
		"%s is not the content this write was based on: expected_sha256 is %s, the file's content hashes to %s. "+
			"Nothing was written; read the file again and base the change on what it holds now", target, expected, actual)
	pe.Data.Path = target
	pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = expected, actual
	return pe
}

// mergeable says whether a session's target at begin is kept for a merge:
// the operations that change an existing file's content in place.
func mergeable(op protocol.Operation) bool {
	return op == protocol.OpOverwrite || op == protocol.OpPatch || op == protocol.OpEdit
}

// keepBase cuts the target as it is at begin into pieces to journal with
// the session's record, when it is small enough to merge: what begin read
// and hashed, or, where begin did not keep it, read again, and kept only
// if it is what begin hashed (a file that changed between the two reads
// is not kept: the session then refuses a change at finalize, as without
// a base).
func (m *Manager) keepBase(r *record) *store.Put {
	// What begin hashed, when it kept it: read again a moment later it
	// could only be found changed, and then not kept.
	data := r.atBegin
	r.atBegin = nil
	if !r.BaseExists || !mergeable(r.Operation) || r.BaseSize > mergeMaxBytes || r.BaseKey != "" {
		return nil
	}
	if m.roomFor(r.BaseSize) != nil {
		// A full store keeps what is acknowledged, not this.
		return nil
	}
	if data == nil {
		var ok bool
		var err error
		data, ok, err = m.readForMerge(m.fsOf(r), r.Target)
		if err != nil || !ok || sum(data) != r.BaseSHA256 {
			return nil
		}
	}
	put := piecesOf(baseKey(r.ID), data)
	r.BaseKey, r.BasePieces = baseKey(r.ID), uint64(len(put.KVs))
	return put
}

// readBase reads the target's content at begin, kept for a merge: from
// memory while the session is not journaled yet (record.pendingBase).
func (m *Manager) readBase(r *record) ([]byte, error) {
	if r.pendingBase != nil {
		var b []byte
		for _, kv := range r.pendingBase.put.KVs {
			b = append(b, kv.Value...)
		}
		return b, nil
	}
	return m.readBackup(r.BaseKey, r.BasePieces)
}

// piecesOf cuts data into backup pieces under key, as backupFile does; an
// empty content still has one (empty) piece.
func piecesOf(key string, data []byte) *store.Put {
	put := &store.Put{Bucket: backupBucket}
	for n := uint64(0); n == 0 || len(data) > 0; n++ {
		k := min(len(data), backupPiece)
		put.KVs = append(put.KVs, store.KV{Key: backupKey(key, n), Value: append([]byte(nil), data[:k]...)})
		data = data[k:]
	}
	return put
}

// readBackup reads a backup whole, for a merge.
func (m *Manager) readBackup(key string, n uint64) ([]byte, error) {
	var b bytes.Buffer
	err := m.backupFill(key, n)(&b)
	return b.Bytes(), err
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// hunksOf lists the other writer's changes a merge kept, for a result.
func hunksOf(hs []merge.Hunk) []protocol.MergeHunk {
	out := make([]protocol.MergeHunk, 0, min(len(hs), protocol.MaxMergeReports))
	for _, h := range hs[:min(len(hs), protocol.MaxMergeReports)] {
		old, t1 := cut(h.Old)
		nw, t2 := cut(h.New)
		out = append(out, protocol.MergeHunk{StartLine: h.BaseStart + 1, EndLine: h.BaseEnd, Old: old, New: nw, Truncated: t1 || t2})
	}
	return out
}

// conflictsOf lists the regions a merge refused. file is the side the
// file holds now, session the side being applied.
func conflictsOf(cs []merge.Conflict, fileIsOurs bool) []protocol.MergeConflict {
	out := make([]protocol.MergeConflict, 0, min(len(cs), protocol.MaxMergeReports))
	for _, c := range cs[:min(len(cs), protocol.MaxMergeReports)] {
		file, session := c.Ours, c.Theirs
		if !fileIsOurs {
			file, session = c.Theirs, c.Ours
		}
		b, t1 := cut(c.Base)
		f, t2 := cut(file)
		s, t3 := cut(session)
		out = append(out, protocol.MergeConflict{StartLine: c.BaseStart + 1, EndLine: c.BaseEnd,
			Base: b, File: f, Session: s, Truncated: t1 || t2 || t3})
	}
	return out
}

// cut bounds one text of a report, on a character boundary, as valid
// UTF-8 (a JSON string cannot carry other bytes as they are).
func cut(b []byte) (string, bool) {
	truncated := len(b) > protocol.MaxMergeTextBytes
	if truncated {
		b = b[:protocol.MaxMergeTextBytes]
		// A character cut in two is dropped, not replaced.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.FullRune(b[lastStart(b):]); i++ {
			b = b[:lastStart(b)]
		}
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD"))), truncated
}

// mergeRefused is target_changed for a merge that found overlapping
// changes: nothing was written, and the conflicting regions say where.
func mergeRefused(r *record, what string, cs []merge.Conflict, fileIsOurs bool, expected, actual string) *protocol.Error {
	more := ""
	if len(cs) > protocol.MaxMergeReports {
		more = " (the first " + strconv.Itoa(protocol.MaxMergeReports) + " are listed)"
	}
	pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
		"%s changed on disk since %s, and %d region(s) of that change overlap the session's own%s; "+
			"nothing was written and the file keeps the other change. Read the file again and redo the change on what it holds now",
		r.Target, what, len(cs), more)
	pe.Data.SessionID, pe.Data.Path = r.ID, r.Target
	pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = expected, actual
	pe.Data.Conflicts = conflictsOf(cs, fileIsOurs)
	return pe
}

// lastStart is where the last (possibly partial) character of b starts.
func lastStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	return max(i, 0)
}

// dropMergeBackups deletes what a session kept for merges. A base kept
// by the session a continuation continues is that session's to drop.
func (m *Manager) dropMergeBackups(r *record) {
	if r.BaseKey == baseKey(r.ID) {
		m.dropBackup(r.BaseKey, r.BasePieces)
	}
	m.dropBackup(afterKey(r.ID), r.AfterPieces)
}

// targetChange is a target that changed since its session began, in a way
// the session can merge with.
type targetChange struct {
	now targetState
}

// changedSince compares the target with its content at begin. Content
// decides, never times or events: a touch, a formatter that changed
// nothing, or a change undone again is no change (nil). A change the
// session can merge with is returned; any other is refused target_changed
// as it always was: a create whose path appeared, a deleted target, a
// target created meanwhile, an append, or a file whose base was not kept.
func (m *Manager) changedSince(r *record) (*targetChange, error) {
	now, err := m.statTarget(m.fsOf(r), r.Target)
	if err != nil {
		return nil, confinedError(r.ID, "reading the current target", err)
	}
	if now.exists == r.BaseExists && (!now.exists || now.sha256 == r.BaseSHA256) {
		return nil, nil
	}
	if now.exists && r.BaseExists && m.sameText(r, now) {
		// Only line endings changed (a CRLF checkout of the same text):
		// no change. The session's result is computed from the file as
		// it is now, so it keeps the file's current endings.
		return nil, nil
	}
	if r.Operation == protocol.OpCreate && !now.exists {
		// A create whose path appeared and vanished again is harmless.
		return nil, nil
	}
	canMerge := now.exists && r.BaseExists &&
		(r.Operation == protocol.OpEdit || mergeable(r.Operation) && r.BasePieces > 0)
	if !canMerge {
		return nil, changedError(r, now)
	}
	return &targetChange{now: now}, nil
}

// sameText says whether the target now differs from its content at
// begin only in line endings (CRLF for LF, either way, line by line). It
// needs the content at begin, kept for merges.
func (m *Manager) sameText(r *record, now targetState) bool {
	if r.BasePieces == 0 || now.size > mergeMaxBytes {
		return false
	}
	base, err := m.readBase(r)
	if err != nil || sum(base) != r.BaseSHA256 {
		return false
	}
	cur, ok, err := m.readForMerge(m.fsOf(r), r.Target)
	if err != nil || !ok {
		return false
	}
	return bytes.Equal(lfForm(base), lfForm(cur))
}

// lfForm is b with every CRLF read as LF.
func lfForm(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// textForm is the content as a tool that reads text shows it: without a
// UTF-8 byte order mark, with CRLF read as LF.
func textForm(b []byte) []byte {
	return lfForm(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
}

// changedError is finalize's refusal of a target that changed since begin.
func changedError(r *record, now targetState) *protocol.Error {
	event := r.Conflict
	if event == "" {
		event = "hash_changed"
	}
	pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
		"%s changed on disk since session %s began (%s); writing now would lose that change. "+
			"Re-read the file and begin a new session, or finalize with force to overwrite it", r.Target, r.ID, event)
	pe.Data.SessionID = r.ID
	pe.Data.Path = r.Target
	pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = hashOrAbsent(r.BaseExists, r.BaseSHA256), hashOrAbsent(now.exists, now.sha256)
	return pe
}

func hashOrAbsent(exists bool, sha string) string {
	if !exists {
		return protocol.AbsentSHA256
	}
	return sha
}

// mergeChange merges a checked session with the change made to its target
// since begin, replacing c.content with the merge, and returns the other
// writer's changes it kept. An edit (search/replace, a unified diff) was
// applied to the current content by the check already, each block where it
// matches exactly once; a patch (whose lines or anchors may have moved)
// and a whole-file write are merged three-way: base the content at begin,
// ours the file now, theirs the session's result. Overlapping changes are
// refused with the regions, and nothing is written.
func (m *Manager) mergeChange(r *record, c *checked, ch *targetChange) ([]merge.Hunk, error) {
	if c.content == nil || !c.hasOriginal || c.sampled {
		return nil, changedError(r, ch.now)
	}
	if r.Operation != protocol.OpEdit && (len(c.original) > mergeMaxBytes || len(c.content) > mergeMaxBytes) {
		// Merged in memory, as the base was kept: up to mergeMaxBytes.
		return nil, changedError(r, ch.now)
	}
	now := c.original
	var base []byte
	if r.BasePieces > 0 {
		b, err := m.readBase(r)
		if err == nil && sum(b) == r.BaseSHA256 {
			base = b
		}
	}
	if base == nil && r.Operation != protocol.OpEdit {
		return nil, changedError(r, ch.now)
	}
	var res merge.Result
	switch r.Operation {
	case protocol.OpEdit:
		if base == nil {
			return nil, nil
		}
		// The other writer's changes, for the result: the file now
		// against the content at begin.
		return m.merge3(r, r.Target, base, now, base).OursHunks, nil
	case protocol.OpPatch:
		theirs, _, err := applyEdit(r, base, c.input)
		if err != nil {
			return nil, changedError(r, ch.now)
		}
		res = m.merge3(r, r.Target, base, now, theirs)
	default:
		res = m.merge3(r, r.Target, base, now, c.content)
	}
	if !res.Clean {
		return nil, mergeRefused(r, "session "+r.ID+" began", res.Conflicts, true, r.BaseSHA256, sum(now))
	}
	c.content = res.Merged
	if err := m.validateInto(c, r, c.content, now, true); err != nil {
		return nil, ioError(r.ID, "encoding the validation result", err)
	}
	return res.OursHunks, nil
}

// changesSinceBegin lists the changes from the target at begin to now,
// for the result of an edit applied again to a changed target; none when
// the base was not kept.
func (m *Manager) changesSinceBegin(r *record, now []byte) []merge.Hunk {
	if r.BasePieces == 0 || now == nil {
		return nil
	}
	base, err := m.readBase(r)
	if err != nil || sum(base) != r.BaseSHA256 {
		return nil
	}
	return m.merge3(r, r.Target, base, now, base).OursHunks
}

// revertMerged reverts a session's change from a target someone changed
// after the session wrote it: three-way, base what the session wrote, ours
// the file now, theirs what the session replaced. It returns the content
// to write and the later changes kept, or target_changed, with the
// overlapping regions where there are some, and nothing written. A
// session that created its file, or whose contents were too large to
// keep, is refused as before.
func (m *Manager) revertMerged(r *record, now targetState) ([]byte, []merge.Hunk, error) {
	refuse := func() *protocol.Error {
		pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
			"%s changed since session %s wrote it; undo would lose that change, so it is refused", r.Target, r.ID)
		pe.Data.SessionID, pe.Data.Path = r.ID, r.Target
		pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = r.Result.FileSHA256, hashOrAbsent(now.exists, now.sha256)
		return pe
	}
	if !now.exists || r.AfterPieces == 0 || r.BackupPieces == 0 || now.size > mergeMaxBytes || r.BackupPieces > maxMergePieces {
		return nil, nil, refuse()
	}
	after, err := m.readBackup(afterKey(r.ID), r.AfterPieces)
	if err != nil || sum(after) != r.Result.FileSHA256 {
		return nil, nil, refuse()
	}
	before, err := m.readBackup(r.ID, r.BackupPieces)
	if err != nil {
		return nil, nil, refuse()
	}
	cur, ok, err := m.readForMerge(m.fsOf(r), r.Target)
	if err != nil || !ok {
		return nil, nil, refuse()
	}
	res := m.merge3(r, r.Target, after, cur, before)
	if !res.Clean {
		return nil, nil, mergeRefused(r, "session "+r.ID+" wrote it", res.Conflicts, true, r.Result.FileSHA256, sum(cur))
	}
	return res.Merged, res.OursHunks, nil
}

// txAfters returns what a committing transaction wrote over existing
// files, as a finalize keeps it, to store in the commit that records the
// transaction committed, so that its undo after later edits can revert
// three-way. The sessions' records name the pieces from now on; they are
// read only once their hash is checked.
func (m *Manager) txAfters(entries []*entry, checks []checked, changes []fileChange) []store.Put {
	put := store.Put{Bucket: backupBucket}
	var size int64
	for i, e := range entries {
		c := checks[i]
		e.rec.AfterPieces = 0
		if !changes[i].OldExists || changes[i].BackupPieces == 0 || c.content == nil ||
			e.rec.Operation == protocol.OpAppend || len(c.content) > mergeMaxBytes {
			continue
		}
		after := piecesOf(afterKey(e.rec.ID), c.content)
		put.KVs = append(put.KVs, after.KVs...)
		e.rec.AfterPieces = uint64(len(after.KVs))
		size += int64(len(c.content))
	}
	if len(put.KVs) == 0 {
		return nil
	}
	_ = m.roomFor(size)
	return []store.Put{put}
}

// releaseBase forgets, in the record, the content at begin of a session
// that will never be written (aborted, expired), and returns what drops
// its pieces, to call once that record is journaled: a crash between the
// two can leave pieces no record names, never a record naming pieces that
// are gone. A base a continuation shares is left to it.
func (m *Manager) releaseBase(r *record) func() {
	if r.BasePieces == 0 || r.BaseKey != baseKey(r.ID) || r.ContinuedBy != "" {
		return func() {}
	}
	key, n := r.BaseKey, r.BasePieces
	r.BaseKey, r.BasePieces = "", 0
	r.pendingBase.release()
	r.pendingBase = nil
	return func() { m.dropBackup(key, n) }
}

// changeAfters is txAfters for a multi-file edit: files are its changes
// as committed, plan their contents.
func (m *Manager) changeAfters(files, plan []fileChange) []store.Put {
	put := store.Put{Bucket: backupBucket}
	var size int64
	for i := range files {
		c := &files[i]
		c.AfterPieces = 0
		if i >= len(plan) || c.Kind == changeDelete || c.OldExists && c.BackupPieces == 0 ||
			plan[i].content == nil || len(plan[i].content) > mergeMaxBytes {
			continue
		}
		after := piecesOf(afterKey(c.BackupID), plan[i].content)
		put.KVs = append(put.KVs, after.KVs...)
		c.AfterPieces = uint64(len(after.KVs))
		size += int64(len(plan[i].content))
	}
	if len(put.KVs) == 0 {
		return nil
	}
	_ = m.roomFor(size)
	return []store.Put{put}
}

// revertChange is revertMerged for one file of a multi-file edit.
func (m *Manager) revertChange(r *record, c fileChange, now targetState) ([]byte, error) {
	refuse := func() *protocol.Error {
		pe := protocol.Errorf(protocol.CodeTargetChanged, protocol.ReasonTargetChanged,
			"%s changed since session %s wrote it; undo would lose that change, so it is refused", c.Path, r.ID)
		pe.Data.SessionID, pe.Data.Path = r.ID, c.Path
		pe.Data.ExpectedSHA256, pe.Data.ActualSHA256 = c.NewSHA256, hashOrAbsent(now.exists, now.sha256)
		return pe
	}
	if c.Kind != changeWrite || !c.OldExists || !now.exists || c.AfterPieces == 0 || c.BackupPieces == 0 || now.size > mergeMaxBytes ||
		c.BackupPieces > maxMergePieces {
		return nil, refuse()
	}
	after, err := m.readBackup(afterKey(c.BackupID), c.AfterPieces)
	if err != nil || sum(after) != c.NewSHA256 {
		return nil, refuse()
	}
	before, err := m.readBackup(c.BackupID, c.BackupPieces)
	if err != nil {
		return nil, refuse()
	}
	cur, ok, err := m.readForMerge(m.fs(), c.Path)
	if err != nil || !ok {
		return nil, refuse()
	}
	res := m.merge3(r, c.Path, after, cur, before)
	if !res.Clean {
		pe := mergeRefused(r, "session "+r.ID+" wrote it", res.Conflicts, true, c.NewSHA256, sum(cur))
		pe.Data.Path = c.Path
		pe.Message = strings.Replace(pe.Message, r.Target, c.Path, 1)
		return nil, pe
	}
	return res.Merged, nil
}

// readForMerge reads a file whole for a merge, through fsys, at most
// mergeMaxBytes of it: ok is false when it is absent or grew past that
// since it was measured.
func (m *Manager) readForMerge(fsys *confine.FS, path string) ([]byte, bool, error) {
	f, err := m.openRegular(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, mergeMaxBytes+1))
	if err != nil {
		return nil, false, err
	}
	return data, len(data) <= mergeMaxBytes, nil
}

// sessionContent reads the session's streamed content whole, as check
// does, for an edit applied again to another content; the caller has
// bounded it (ValidateMaxBytes).
func (m *Manager) sessionContent(r *record) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(r.contentBytes()))
	if r.inline != nil {
		// A session.write not journaled yet: its content is at hand,
		// copied as the journal's would be, since it is still to be
		// journaled as sent.
		buf.Write(r.inline)
		return buf.Bytes(), nil
	}
	for _, s := range r.segments() {
		if _, err := m.cfg.Store.CopyRange(s.ID, &buf, 0, s.Bytes); err != nil {
			return nil, ioError(r.ID, "reading the journal", err)
		}
	}
	return buf.Bytes(), nil
}

// mergeFailedEdit retries an edit (search/replace, unified diff, patch)
// that does not apply to the file as it is now, when someone changed the
// file since begin: the edit was written against the content at begin,
// so it is applied to that content, and the result merged three-way with
// the file now (base the content at begin, ours the file now, theirs the
// edit applied to the base). ok is false where that cannot be done (no
// base kept, or the edit fails on the base too): the edit's own failure
// then stands. Overlapping changes are refused target_changed with the
// regions, nothing written.
func (m *Manager) mergeFailedEdit(r *record, ch *targetChange) (c checked, hunks []merge.Hunk, ok bool, err error) {
	if ch == nil || r.BasePieces == 0 || ch.now.size > mergeMaxBytes {
		return checked{}, nil, false, nil
	}
	base, err := m.readBase(r)
	if err != nil || sum(base) != r.BaseSHA256 {
		return checked{}, nil, false, nil
	}
	input, err := m.sessionContent(r)
	if err != nil {
		return checked{}, nil, false, err
	}
	theirs, res, err := applyEdit(r, base, input)
	if err != nil {
		return checked{}, nil, false, nil
	}
	now, exists, err := m.readForMerge(m.fsOf(r), r.Target)
	if err != nil {
		return checked{}, nil, true, confinedError(r.ID, "reading the current target", err)
	}
	if !exists {
		return checked{}, nil, true, changedError(r, ch.now)
	}
	mr := m.merge3(r, r.Target, base, now, theirs)
	if !mr.Clean {
		return checked{}, nil, true, mergeRefused(r, "session "+r.ID+" began", mr.Conflicts, true, r.BaseSHA256, sum(now))
	}
	c = checked{content: mr.Merged, original: now, hasOriginal: true, edit: res, input: input}
	return c, mr.OursHunks, true, m.validateInto(&c, r, c.content, now, true)
}
