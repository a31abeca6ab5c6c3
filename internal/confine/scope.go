//go:build unix

package confine

import (
	"errors"
	"sync"

	"github.com/orion-agent/orion/internal/pathguard"
)

// Scoped returns a view of f for one request, sharing f's descriptors.
// What the protection rules read by path (whether a directory above the
// target holds a repository) is read once per request instead of at every
// step (pathguard.Scope), and each directory the request opens stays open
// until Close, so its steps do not walk down from the root again.
//
// A kept directory is no weaker than one opened again: before every use
// the kernel's current name of it is compared with the path it was opened
// for, as OpenDir compares it after an open, so a directory on the way
// swapped for a symlink since (or the directory moved) is refused at the
// moment of use as it was. Where the kernel does not name an open
// directory (no /proc), nothing is kept and every step opens again.
//
// Close the view when the request ends; Within of it shares its scope.
func (f *FS) Scoped() *FS {
	return &FS{roots: f.roots, guard: f.guard, workspace: f.workspace, scope: &scope{paths: pathguard.NewScope()}}
}

// PathScope is what a request's view remembers of the paths it checked,
// for the guard's own checks in the same request (Guard.ResolveIn); nil
// for a view that is no request's.
func (f *FS) PathScope() *pathguard.Scope {
	if f.scope == nil {
		return nil
	}
	return f.scope.paths
}

// Guard is the guard f checks paths with.
func (f *FS) Guard() *pathguard.Guard { return f.guard }

// scope is what a request's view keeps.
type scope struct {
	paths *pathguard.Scope

	mu   sync.Mutex
	dirs map[dirKey]*Dir
	// retired are kept directories found moved, closed with the rest.
	retired []*Dir
	closed  bool
}

// dirKey names a directory as a view opens it: through the workspace it
// is confined to, or through its root.
type dirKey struct{ workspace, dir string }

func (s *scope) openDir(f *FS, dir string) (*Dir, error) {
	key := dirKey{f.workspace, dir}
	s.mu.Lock()
	d := s.dirs[key]
	s.mu.Unlock()
	if d != nil {
		if same, _ := kernelPathIs(d.f, dir); same {
			return d, nil
		}
		// Moved, removed or replaced since: opened again, the path
		// gets the answer a first open would give (refused, missing, or
		// the directory now there). The old descriptor stays open until
		// the request ends: an earlier step may still be using it, and
		// its number must not name another directory meanwhile.
		s.mu.Lock()
		if s.dirs[key] == d {
			delete(s.dirs, key)
			s.retired = append(s.retired, d)
		}
		s.mu.Unlock()
	}
	d, err := f.openDir(dir)
	if err != nil {
		return nil, err
	}
	if !d.named {
		return d, nil // not kept: it could not be checked again at its next use
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return d, nil
	}
	if held := s.dirs[key]; held != nil {
		d.Close()
		return held, nil
	}
	if s.dirs == nil {
		s.dirs = map[dirKey]*Dir{}
	}
	d.held = true
	s.dirs[key] = d
	return d, nil
}

func (s *scope) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for k, d := range s.dirs {
		d.held = false
		errs = append(errs, d.Close())
		delete(s.dirs, k)
	}
	for _, d := range s.retired {
		d.held = false
		errs = append(errs, d.Close())
	}
	s.retired = nil
	return errors.Join(errs...)
}
