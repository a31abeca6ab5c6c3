//go:build unix

package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/orion-agent/orion/internal/confine"
	"github.com/orion-agent/orion/internal/failpoint"
)

// Streamed is a file without a name (see StageHidden) filled piece by piece
// while its content arrives, long before the caller knows whether it will
// keep it: a large file whose content comes in chunks is then written once,
// as they come, instead of all at once at the end. Stage turns it into
// staged content for a target; Close drops it. Whenever the process dies
// before Stage's Commit, the file is gone with it.
//
// WriteAt may be called from several goroutines at once (pieces of
// different offsets); Stage and Close only once every WriteAt returned.
type Streamed struct {
	f *os.File
	// mu guards err, end and started.
	mu sync.Mutex
	// err is the first failed write's: the file no longer holds what was
	// given to it.
	err error
	// end is the end of the furthest piece written; started where the
	// kernel was last asked to start writing back (startWriteBack, every
	// writeBackBytes).
	end, started int64
}

// StreamHidden creates an empty Streamed file in dir. It fails with an
// error wrapping ErrNoHidden where the file system cannot make a file
// without a name.
func StreamHidden(dir *confine.Dir) (*Streamed, error) {
	f, err := dir.CreateUnnamed(0o600)
	if err != nil {
		return nil, err
	}
	return &Streamed{f: f}, nil
}

// WriteAt writes p at offset off. A failed write is kept and returned by
// Stage: the caller need not stop writing.
func (s *Streamed) WriteAt(p []byte, off int64) error {
	_, err := s.f.WriteAt(p, off)
	s.mu.Lock()
	if err != nil && s.err == nil {
		s.err = err
	}
	s.end = max(s.end, off+int64(len(p)))
	var from, to int64
	if s.end-s.started >= writeBackBytes {
		from, to = s.started, s.end
		s.started = s.end
	}
	s.mu.Unlock()
	if to > from {
		startWriteBack(s.f, from, to-from)
	}
	return err
}

// Stage makes the first size bytes of the file the staged new content of
// name in dir, as Stage's fill would have: anything written past size is
// cut off, the target is checked as Stage checks it (opts.Mode and Perm,
// the existing file's permission and owner carried over), and the file is
// fsynced. opts.SHA256 must be the SHA-256 of those size bytes: it is not
// computed again. dir need not be the directory s was created in, only on
// the same file system. s is used up, whether Stage succeeds or not.
func (s *Streamed) Stage(dir *confine.Dir, name string, opts Options, size int64) (*Staged, error) {
	f := s.f
	s.f = nil
	kept := false
	defer func() {
		if !kept {
			f.Close()
		}
	}()
	path := dir.Join(name)
	if err := checkArgs(path, name, opts); err != nil {
		return nil, err
	}
	if opts.SHA256 == "" {
		return nil, fmt.Errorf("write %s: %w", path, errNoSum)
	}
	s.mu.Lock()
	err, end := s.err, s.end
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if end < size {
		return nil, fmt.Errorf("write %s: %d bytes streamed, %d wanted", path, end, size)
	}
	perm, owner, err := targetOf(dir, name, path, opts)
	if err != nil {
		return nil, err
	}
	if end > size {
		if err := f.Truncate(size); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := ownAndPerm(f, path, perm, owner); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	// Crash tests die here: the content durable in a file without a
	// name, which the kill takes with it.
	failpoint.Hit("atomicfile.streamed-synced")
	kept = true
	res := Result{Bytes: size, SHA256: opts.SHA256, Mode: perm}
	return &Staged{dir: dir, path: path, name: name, mode: opts.Mode, tag: opts.Tag, hidden: f, res: res}, nil
}

// Close drops the file, unless Stage took it.
func (s *Streamed) Close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// writeBackBytes is how much a Streamed file is written between two
// requests to write back.
const writeBackBytes = 4 << 20

// errNoSum refuses a Stage without the content's hash, which it does not
// read the file back to compute.
var errNoSum = errors.New("staging a streamed file needs the SHA-256 of its content")
