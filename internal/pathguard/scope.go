package pathguard

import (
	"path/filepath"
	"sync"
)

// A Scope remembers, for one request, what the guard read from disk about
// the directories above the paths it checked: whether each holds a
// repository's internals, and whether a .git entry in it exists and where a
// .git file points. A request checks its target several times (at its
// resolution, before reading it, before each file it reads beside it and
// before writing), and each check used to walk from "/" down to the path
// looking for a repository; with a Scope each directory is looked at once
// per request.
//
// What a Scope keeps is what a check by path would have read a moment
// earlier: a check by path cannot stop a repository made between it and
// the write anyway. What stops a directory swapped for a symlink is the
// confined layer's descriptors (package confine), which a Scope does not
// change. The git-partial rule, read through those descriptors, is not
// kept. A Scope is for one request; it is safe for concurrent use.
type Scope struct {
	mu       sync.Mutex
	dirs     map[string]dirFacts
	resolved map[[2]string]resolution
	// verdicts are what the rules reading no directory through an
	// OpenDirFunc said of each path checked (see verdict).
	verdicts map[verdictKey]byPath
}

type verdictKey struct {
	g    *Guard
	path string
}

// dirFacts is what the protection rules read of one directory.
type dirFacts struct {
	gitDir bool   // it holds a repository's internals (isGitDir)
	dotGit bool   // an entry named .git exists in it
	link   string // where its .git file points, when linked
	linked bool
}

type resolution struct {
	path string
	err  error
}

// NewScope returns an empty Scope for one request.
func NewScope() *Scope { return &Scope{} }

// facts returns what dir holds, read now or earlier in the scope; a nil
// Scope reads it every time.
func (s *Scope) facts(dir string) dirFacts {
	if s != nil {
		s.mu.Lock()
		f, ok := s.dirs[dir]
		s.mu.Unlock()
		if ok {
			return f
		}
	}
	f := dirFacts{gitDir: isGitDir(dir)}
	f.link, f.linked, f.dotGit = gitLink(dir)
	if s != nil {
		s.mu.Lock()
		if s.dirs == nil {
			s.dirs = map[string]dirFacts{}
		}
		s.dirs[dir] = f
		s.mu.Unlock()
	}
	return f
}

// notDir records that path was seen, in this request, not to be a
// directory (missing, or a file): it holds no repository and no .git. A
// nil Scope records nothing.
func (s *Scope) notDir(path string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.dirs == nil {
		s.dirs = map[string]dirFacts{}
	}
	if _, ok := s.dirs[path]; !ok {
		s.dirs[path] = dirFacts{}
	}
	s.mu.Unlock()
}

// HasDotGit reports whether the directory dir (clean, absolute) has an
// entry named .git, a directory or a file: where a repository's work tree
// starts. It is read once per Scope.
func (s *Scope) HasDotGit(dir string) bool {
	return s.facts(filepath.Clean(dir)).dotGit
}

// ResolveIn is Resolve, remembered in s: the same target and workspace
// resolved again in the same request give the first answer without
// walking the path again. A nil s resolves every time.
func (g *Guard) ResolveIn(s *Scope, target, workspaceRoot string) (string, error) {
	if s == nil {
		return g.Resolve(target, workspaceRoot)
	}
	key := [2]string{target, workspaceRoot}
	s.mu.Lock()
	r, ok := s.resolved[key]
	s.mu.Unlock()
	if ok {
		return r.path, r.err
	}
	p, err := g.resolve(target, workspaceRoot, true, s)
	s.mu.Lock()
	if s.resolved == nil {
		s.resolved = map[[2]string]resolution{}
	}
	s.resolved[key] = resolution{p, err}
	s.mu.Unlock()
	return p, err
}

// CheckProtectedScoped is CheckProtectedIn with what the rules read by
// path remembered in s.
func (g *Guard) CheckProtectedScoped(s *Scope, path string, open OpenDirFunc) error {
	path = filepath.Clean(path)
	m, ok, err := g.protected(path, open, s)
	if ok {
		return g.ProtectedError(path, m)
	}
	return err
}

// verdict is g.byPath(path, s), remembered in s: a request checks its
// target three or four times (resolved, read, written), and the rules it
// answers from depend on nothing else than what s keeps already (the
// directories above the path, looked at once per Scope), so each later
// check gives the first answer without matching the rules again. The
// git-partial rule, which reads through descriptors at each check, is left
// out of it (see Guard.protected). A nil Scope works it out every time.
func (s *Scope) verdict(g *Guard, path string) byPath {
	if s == nil {
		return g.byPath(path, nil)
	}
	key := verdictKey{g, path}
	s.mu.Lock()
	v, ok := s.verdicts[key]
	s.mu.Unlock()
	if ok {
		return v
	}
	v = g.byPath(path, s)
	s.mu.Lock()
	if s.verdicts == nil {
		s.verdicts = map[verdictKey]byPath{}
	}
	s.verdicts[key] = v
	s.mu.Unlock()
	return v
}
