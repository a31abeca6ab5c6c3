package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/protocol"
)

// Every file a session reads or writes is reached here, through the
// descriptors of package confine: the target's directory is opened inside
// its root at the moment of use and every operation names the file
// relative to it. A path checked at begin (or at finalize) is never opened
// by name, so swapping a directory for a symlink in between cannot move a
// read or a write outside the roots or onto a protected path.

// openRegular opens the target at path for reading, through fsys (the
// daemon's view of the files, m.fs(), or a request's, see fsOf): a regular
// file, or an error satisfying errors.Is(err, fs.ErrNotExist) when it (or
// its directory) is missing. A FIFO or device planted there is refused
// without blocking.
func (m *Manager) openRegular(fsys *confine.FS, path string) (*os.File, error) {
	d, name, err := fsys.OpenParent(path)
	if err != nil {
		var pe *pathguard.Error
		if errors.As(err, &pe) && pe.Reason == pathguard.ReasonParentMissing {
			return nil, &os.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		}
		return nil, err
	}
	defer d.Close()
	return d.OpenRegular(name)
}

// readTarget returns the target's content, read through fsys, or ok
// false when it does not exist.
func (m *Manager) readTarget(fsys *confine.FS, path string) (data []byte, ok bool, err error) {
	f, err := m.openRegular(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(f)
	return data, err == nil, err
}

// sampleBytes is how much of each end of a target over the validation
// limit the check reads: enough to learn its conventions (byte order
// mark, line endings, final newline, a wrapping fence) without holding a
// file of any size.
const sampleBytes = 64 << 10

// readTargetBounded is readTarget for the check of a whole-file write,
// which holds at most limit bytes of the file it replaces: a larger file
// is read as a sample, its first and last sampleBytes cut at line ends
// (sampled set), and never held whole.
func (m *Manager) readTargetBounded(fsys *confine.FS, path string, limit int64) (data []byte, ok, sampled bool, err error) {
	f, err := m.openRegular(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, false, nil
	}
	if err != nil {
		return nil, false, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, false, err
	}
	if fi.Size() <= limit {
		// One byte over the limit shows a file that grew since the Stat.
		data, err = io.ReadAll(io.LimitReader(f, limit+1))
		if err != nil {
			return nil, false, false, err
		}
		if int64(len(data)) <= limit {
			return data, true, false, nil
		}
	}
	data, err = readSample(f)
	return data, err == nil, err == nil, err
}

// readSample returns the head and the tail of f, each cut at a line end
// (or, in a file without one, at a character's start) so that no line and
// no UTF-8 sequence is split where they join.
func readSample(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	buf := make([]byte, 2*sampleBytes)
	head := buf[:sampleBytes]
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	head = head[:n]
	if int64(n) >= size {
		return head, nil
	}
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		head = head[:runeStart(head, len(head))]
	}
	tail := buf[len(head) : len(head)+sampleBytes]
	off := max(size-sampleBytes, int64(len(head)))
	n, err = f.ReadAt(tail, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	tail = tail[:n]
	if off > int64(len(head)) {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		} else {
			tail = tail[runeStart(tail, 0):]
		}
	}
	return append(head, tail...), nil
}

// runeStart is the first index at or after i (before len(b) at most)
// where a UTF-8 sequence starts, looking back from i at most 3 bytes when
// i is the end.
func runeStart(b []byte, i int) int {
	if i == len(b) {
		for j := len(b) - 1; j >= 0 && j >= len(b)-utf8.UTFMax; j-- {
			if utf8.RuneStart(b[j]) {
				if utf8.FullRune(b[j:]) {
					return len(b)
				}
				return j
			}
		}
		return len(b)
	}
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

// targetState is what a target looked like at one moment.
type targetState struct {
	exists bool
	size   int64
	sha256 string
	perm   fs.FileMode
}

// statTarget hashes the target as it is now, read through fsys.
func (m *Manager) statTarget(fsys *confine.FS, path string) (targetState, error) {
	st, _, err := m.readTargetState(fsys, path, -1)
	return st, err
}

// readTargetState is statTarget that also returns the content it
// hashed, when that is at most keep bytes: nil otherwise, and for a
// missing target.
func (m *Manager) readTargetState(fsys *confine.FS, path string, keep int64) (targetState, []byte, error) {
	f, err := m.openRegular(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return targetState{}, nil, nil
	}
	if err != nil {
		return targetState{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return targetState{}, nil, err
	}
	st := targetState{exists: true, perm: fi.Mode().Perm()}
	h := sha256.New()
	if fi.Size() <= keep {
		// One byte more than the size, to see the end: a file that grew
		// since the Stat is hashed whole and not kept.
		data := make([]byte, fi.Size()+1)
		n, err := io.ReadFull(f, data)
		data = data[:n:n]
		h.Write(data)
		st.size = int64(n)
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			st.sha256 = hex.EncodeToString(h.Sum(nil))
			return st, data, nil
		case err != nil:
			return targetState{}, nil, err
		}
	}
	n, err := io.Copy(h, f)
	if err != nil {
		return targetState{}, nil, err
	}
	st.size += n
	st.sha256 = hex.EncodeToString(h.Sum(nil))
	return st, nil, nil
}

// baseRead is the target as a session.write read it at its begin: the
// request's later steps (the check, the backup, an append's copy of the
// file, the look for a change since begin) take it from here rather than
// reading the file again. Read again a moment later by the same request,
// it would guard no wider a window than the one left between that read and
// the rename anyway.
type baseRead struct {
	// data is the content, when the target exists.
	data []byte
}

// currentTarget returns the target's content now (ok false when it does
// not exist), read through the request's view: for a session.write, as its
// begin read it (see baseRead).
func (m *Manager) currentTarget(r *record) (data []byte, ok bool, err error) {
	if r.base != nil {
		return r.base.data, r.BaseExists, nil
	}
	return m.readTarget(m.fsOf(r), r.Target)
}

// copyExisting copies r's target's current content to w (nothing when it
// does not exist), for append.
func (m *Manager) copyExisting(r *record, w io.Writer, path string) error {
	if r.base != nil && path == r.Target {
		_, err := w.Write(r.base.data)
		return err
	}
	f, err := m.openRegular(m.fsOf(r), path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// fsOf is the confined layer as the request working on r sees it: the
// request's view (see confine.FS.Scoped) while one is running, the
// daemon's otherwise.
func (m *Manager) fsOf(r *record) *confine.FS {
	if r != nil && r.files != nil {
		return r.files
	}
	return m.fs()
}

// workspaceOf is the directory r is confined to: its workspace root as
// resolved at begin ("" when the session named none). A record journaled
// before sessions kept the resolved workspace has it resolved now; one
// that no longer resolves confines the session to the path as given, which
// no real path lies under if it was a symlink, so it fails closed.
func (m *Manager) workspaceOf(r *record) string {
	if r.Workspace != "" || r.WorkspaceRoot == "" {
		return r.Workspace
	}
	if ws, err := m.guard().Workspace(r.WorkspaceRoot); err == nil {
		return ws
	}
	return r.WorkspaceRoot
}

// openParentMaking is fsys.OpenParent that first makes the directories on
// the way that do not exist (inside the root, see confine.MkdirAll), as
// editors and agents do. It returns the directories it made, so a failed
// write, an undo or a roll-back can remove them again.
//
// A non-empty workspace confines every step to it (confine.FS.Within).
func (m *Manager) openParentMaking(fsys *confine.FS, workspace, path string) (*confine.Dir, string, []string, error) {
	files := fsys.Within(workspace)
	d, name, err := files.OpenParent(path)
	if err == nil || !confine.IsMissingDir(err) {
		return d, name, nil, err
	}
	made, err := files.MkdirFor(path)
	if err == nil {
		d, name, err = files.OpenParent(path)
	}
	if err != nil {
		fsys.RemoveEmptyDirs(made)
		return nil, "", nil, err
	}
	return d, name, made, nil
}

// writeFile replaces path atomically with what fill writes, through fsys
// and confined to workspace (when not ""), making the missing directories
// on the way; it returns those it made.
func (m *Manager) writeFile(fsys *confine.FS, workspace, path string, opts atomicfile.Options, fill func(io.Writer) error) (atomicfile.Result, []string, error) {
	d, name, made, err := m.openParentMaking(fsys, workspace, path)
	if err != nil {
		return atomicfile.Result{}, nil, err
	}
	defer d.Close()
	res, err := atomicfile.Write(d, name, opts, fill)
	if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		fsys.RemoveEmptyDirs(made)
		return res, nil, err
	}
	return res, made, err
}

// removeFile removes path and makes the removal durable.
func (m *Manager) removeFile(path string) error {
	d, name, err := m.fs().OpenParent(path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.CheckWritable(name); err != nil {
		return err
	}
	return atomicfile.Remove(d, name)
}

// cleanTemp removes the temp files tag left in the directory of path.
func (m *Manager) cleanTemp(path, tag string) ([]string, error) {
	d, _, err := m.fs().OpenParent(path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return atomicfile.CleanTemp(d, tag)
}

// confinedError maps a refusal of the confined layer onto the wire's path
// codes, and anything else onto io_error.
func confinedError(id, doing string, err error) *protocol.Error {
	var pe *pathguard.Error
	if errors.As(err, &pe) {
		e := pathError(pe).(*protocol.Error)
		e.Data.SessionID = id
		return e
	}
	return ioError(id, doing, err)
}
