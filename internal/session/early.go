package session

import (
	"bytes"
	"errors"
	"sync"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/protocol"
)

// early is a finalize's new file, written and fsynced while the finalize's
// record is being journaled, in a temp file without a name (see
// atomicfile.StageHidden) that is named and renamed over the target only
// once the record is durable. The file's sync and the journal's then
// overlap: a whole-file write waits for two syncs in a row, not three.
// The request writes the file itself and the kernel makes its sync
// (atomicfile.StageHiddenAsync); where it cannot, a goroutine writes and
// syncs it.
//
// A crash at any point leaves the old file or the new one and no temp file:
// before the record is durable, nothing of the write has a name; after it,
// recovery finds the record (finalizing) and settles the write as it
// settles any interrupted finalize, removing a named temp file.
type early struct {
	d  *confine.Dir
	op protocol.Operation
	// bytes is what the file holds, for a finalize to tell whether it is
	// the content its check settled on (see stageSpeculative).
	bytes   []byte
	content *counter
	// sum is the file's SHA-256 as the finalize computed it (its pending
	// sum), which the staged write does not compute again.
	sum    string
	staged *atomicfile.Staged
	err    error
	done   chan struct{}
	// synced waits for the directory's sync once the file is named.
	synced func() (atomicfile.Result, error)

	// mu guards what tells the goroutine writing the file and the request
	// which of them lets go of it when the finalize did not take it.
	mu       sync.Mutex
	finished bool // the goroutine is done with it
	dropped  bool // the request does not want it
	released bool
	// async is set when the file was written by the request, its sync
	// made by the kernel (atomicfile.StageHiddenAsync): letting go of it
	// waits for that sync, and no longer uses the directory.
	async bool
	// fallback: a file that could not be staged or named leaves the
	// write to the usual way (a streamed file, see streamed.go, whose
	// staging is an optimization only).
	fallback bool
}

// testHookEarly, set by tests, is told whether a finalize took the file a
// session.write started writing before its check (see stageSpeculative).
var testHookEarly func(taken bool)

// testHookListed, set by tests, is called with a session.write's id once
// other requests can find the session by it.
var testHookListed func(id string)

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
	e := m.startEarly(r, op, content)
	if e != nil {
		e.sum = sum
	}
	return e
}

// stageSpeculative starts writing a session.write's file from its content
// as sent, before the content is checked: the check, the record and its
// journaling then run while the file is written and synced, and the file's
// start (a goroutine woken on the other core) is off the request's path.
// The finalize takes it only if the check left the content byte for byte
// as sent (take); otherwise it is dropped unnamed, which nothing sees, and
// the checked content is staged as before.
//
// It starts nothing for content a check is likely to change: a file that
// would get a final newline, or other line endings, or loses a fence
// around it. Whatever it started is let go of by settle, which the request
// calls before it closes its view of the files.
func (m *Manager) stageSpeculative(r *record, op protocol.Operation, content []byte) *early {
	if op != protocol.OpCreate && op != protocol.OpOverwrite {
		return nil
	}
	if len(content) > 0 && (content[len(content)-1] != '\n' || bytes.IndexByte(content, '\r') >= 0 ||
		bytes.HasPrefix(content, []byte("```")) || bytes.HasPrefix(content, []byte("~~~"))) {
		return nil
	}
	if r.AllowLegacyDone || int64(len(content)) > m.cfg.ValidateMaxBytes {
		return nil
	}
	return m.startEarly(r, op, content)
}

func (m *Manager) startEarly(r *record, op protocol.Operation, content []byte) *early {
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
	e := &early{d: d, op: op, bytes: content, content: newCounter(), done: make(chan struct{})}
	// The file holds exactly the content: its own hash is the content's.
	e.content.h = nil
	fill := m.contentFill(r, r.Target, op, content, "", e.content)
	opts := atomicfile.Options{Mode: mode, Perm: 0o644, Tag: r.ID, Unhashed: true}
	// Written here, its sync made by the kernel while the request goes
	// on: no thread to wake for it. Where the kernel cannot, a goroutine
	// writes and syncs it. (Making a file without a name takes a handle
	// on the file system's journal, which waits out a commit of it in
	// progress: on a file system others keep busy, that wait is the
	// request's. Written by a goroutine instead, the file's sync more
	// often ended after the record's, the goroutine's start on the other
	// core coming that much later.)
	if testHookNoHidden.Load() {
		e.err, e.finished = atomicfile.ErrNoHidden, true
		close(e.done)
		return e
	}
	staged, err := atomicfile.StageHiddenAsync(d, name, opts, fill)
	if !errors.Is(err, atomicfile.ErrNoAsync) {
		e.staged, e.err, e.finished, e.async = staged, err, true, true
		close(e.done)
		return e
	}
	go func() {
		e.finish(atomicfile.StageHidden(d, name, opts, fill))
	}()
	return e
}

// finish records how a staging run on its own goroutine ended, lets go of
// the file at once if it was dropped meanwhile, and wakes the waiters.
func (e *early) finish(staged *atomicfile.Staged, err error) {
	e.mu.Lock()
	e.staged, e.err = staged, err
	e.finished = true
	drop := e.dropped
	e.mu.Unlock()
	if drop {
		e.release()
	}
	close(e.done)
}

// take says whether e is the file a finalize writing content with op
// wants: the same bytes, written the same way.
func (e *early) take(op protocol.Operation, content []byte) bool {
	return e != nil && e.op == op && content != nil && bytes.Equal(e.bytes, content)
}

// stillThere reports whether the directory e's file was started in is
// still the one path's parent leads to. It may have moved since (out of
// the workspace, even) or been replaced: every other step of a request
// checks its directory again at the moment of use (confine.FS.Scoped),
// and the file must not be named in a directory the path no longer
// leads to.
func (e *early) stillThere(m *Manager, r *record, path string) bool {
	// Once the goroutine writing the file (if any) is done with e.d.
	<-e.done
	if still, known := e.d.StillAt(); known {
		return still
	}
	d, _, err := m.fsOf(r).Within(m.workspaceOf(r)).OpenParent(path)
	if err != nil {
		return false
	}
	defer d.Close()
	return d.SameAs(e.d)
}

// commit names and renames the staged file once the record is durable. ok
// is false when the file could not be staged without a name (the file
// system cannot): nothing was written, and the caller writes it the usual
// way.
//
// The file is in place when it returns, its directory's sync maybe still
// under way (atomicfile.Staged.CommitSyncing): dirSynced waits for it, and
// is called before the write is journaled as done or answered.
func (e *early) commit() (res atomicfile.Result, ok bool, err error) {
	<-e.done
	e.mu.Lock()
	e.released = true
	e.mu.Unlock()
	if errors.Is(e.err, atomicfile.ErrNoHidden) || e.err != nil && e.fallback && !errors.Is(e.err, atomicfile.ErrExists) {
		e.d.Close()
		return atomicfile.Result{}, false, nil
	}
	if e.err != nil {
		e.d.Close()
		return atomicfile.Result{}, true, e.err
	}
	synced, err := e.staged.CommitSyncing()
	if err != nil && e.fallback && !errors.Is(err, atomicfile.ErrExists) && !errors.Is(err, atomicfile.ErrNotDurable) {
		// Nothing was named: the usual write starts afresh.
		e.d.Close()
		return atomicfile.Result{}, false, nil
	}
	if err != nil {
		e.d.Close()
		return atomicfile.Result{}, true, err
	}
	e.synced = synced
	res = e.staged.Result()
	res.SHA256 = e.sum
	return res, true, nil
}

// dirSynced waits for the sync of the directory the file was named in
// (see commit) and returns its error, which wraps atomicfile.ErrNotDurable;
// nil where there is nothing to wait for.
func (e *early) dirSynced() error {
	if e == nil || e.synced == nil {
		return nil
	}
	synced := e.synced
	e.synced = nil
	_, err := synced()
	e.d.Close()
	return err
}

// discard drops the staged file: the record it waited for failed.
func (e *early) discard() {
	<-e.done
	e.release()
}

// drop lets go of the file without waiting for it to be written: whoever
// of the request and the goroutine writing it comes last discards it.
func (e *early) drop() {
	e.mu.Lock()
	e.dropped = true
	finished := e.finished
	e.mu.Unlock()
	if finished {
		e.release()
	}
}

// settle waits for the goroutine writing the file and discards the file
// if no finalize took it, so that nothing of it outlives the request's
// view of the files (whose directory it was written in).
func (e *early) settle() {
	if e == nil {
		return
	}
	<-e.done
	e.release()
}

// release discards the staged file and lets go of its directory, once.
func (e *early) release() {
	e.mu.Lock()
	if e.released {
		e.mu.Unlock()
		return
	}
	e.released = true
	e.mu.Unlock()
	switch {
	case e.staged != nil && e.async:
		// Its sync may still be under way: waited for aside, as the
		// file alone needs (the directory is let go of here).
		go e.staged.Discard()
	case e.staged != nil:
		e.staged.Discard()
	}
	e.d.Close()
}
