package session

import (
	"errors"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/protocol"
)

// early is a finalize's new file, written and fsynced while the finalize's
// record is being journaled, in a temp file without a name (see
// atomicfile.StageHidden) that is named and renamed over the target only
// once the record is durable. The file's sync and the journal's then
// overlap: a whole-file write waits for two syncs in a row, not three.
//
// A crash at any point leaves the old file or the new one and no temp file:
// before the record is durable, nothing of the write has a name; after it,
// recovery finds the record (finalizing) and settles the write as it
// settles any interrupted finalize, removing a named temp file.
type early struct {
	d       *confine.Dir
	content *counter
	staged  *atomicfile.Staged
	err     error
	done    chan struct{}
	// fallback: a file that could not be staged or named leaves the
	// write to the usual way (a streamed file, see streamed.go, whose
	// staging is an optimization only).
	fallback bool
}

// stageEarly starts writing the file of a finalize whose content is in
// memory (content, not an append, nothing to add after it) into a hidden
// temp file next to the target. It returns nil, having started nothing,
// when the target's directory cannot be opened as it is (one to make, or an
// error the write itself then reports): the write is then made after the
// record, as before.
//
// sum is the SHA-256 of the file as it will be (the finalize's pending
// sum), which the staged write then does not compute again.
func (m *Manager) stageEarly(r *record, op protocol.Operation, content []byte, sum string) *early {
	if content == nil || op == protocol.OpAppend {
		return nil
	}
	d, name, err := m.fsOf(r).Within(m.workspaceOf(r)).OpenParent(r.Target)
	if err != nil {
		return nil
	}
	mode := atomicfile.Replace
	if op == protocol.OpCreate {
		mode = atomicfile.CreateNew
	}
	e := &early{d: d, content: newCounter(), done: make(chan struct{})}
	// The file holds exactly the content: its own hash is the content's.
	e.content.h = nil
	fill := m.contentFill(r, r.Target, op, content, "", e.content)
	opts := atomicfile.Options{Mode: mode, Perm: 0o644, Tag: r.ID, SHA256: sum}
	go func() {
		defer close(e.done)
		e.staged, e.err = atomicfile.StageHidden(d, name, opts, fill)
	}()
	return e
}

// commit names and renames the staged file once the record is durable. ok
// is false when the file could not be staged without a name (the file
// system cannot): nothing was written, and the caller writes it the usual
// way.
func (e *early) commit() (res atomicfile.Result, ok bool, err error) {
	<-e.done
	defer e.d.Close()
	if errors.Is(e.err, atomicfile.ErrNoHidden) {
		return atomicfile.Result{}, false, nil
	}
	if e.err != nil && e.fallback && !errors.Is(e.err, atomicfile.ErrExists) {
		return atomicfile.Result{}, false, nil
	}
	if e.err != nil {
		return atomicfile.Result{}, true, e.err
	}
	res, err = e.staged.Commit()
	if err != nil && e.fallback && !errors.Is(err, atomicfile.ErrExists) && !errors.Is(err, atomicfile.ErrNotDurable) {
		// Nothing was named: the usual write starts afresh.
		return atomicfile.Result{}, false, nil
	}
	return res, true, err
}

// discard drops the staged file: the record it waited for failed.
func (e *early) discard() {
	<-e.done
	if e.staged != nil {
		e.staged.Discard()
	}
	e.d.Close()
}
