// Package pathguard decides whether the daemon may write a target path: the
// path must resolve, through ".." and symlinks, to a regular file (existing or
// not) inside one of the allowed roots, and not be protected. Directories on
// the way that do not exist yet are allowed: they are made at the write.
//
// A Guard only checks; it does not open anything. Between Resolve and the
// write, another process could swap a directory for a symlink, so a
// resolved path is never opened by name: package confine reaches it again
// through descriptors of the roots, and checks it again there.
package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Guard holds the allowed roots, each cleaned and resolved through symlinks
// at construction. A Guard is immutable and safe for concurrent use.
type Guard struct {
	// roots are the resolved roots, in the order given, without duplicates.
	roots []string
	// given are the roots as configured, cleaned. A target spelled through a
	// symlinked root (/tmp/x where /tmp -> /private/tmp) is lexically inside
	// one of these, so it is not misreported as outside the roots.
	given []string
	// protect is refused inside the roots (see Protection).
	protect protection
}

// New returns a Guard for roots. Each root must be an absolute path to an
// existing directory; it is resolved through symlinks now, so later
// comparisons are between real paths. An empty list is an error rather than
// a guard that refuses everything, because that is always a misconfiguration.
func New(roots []string) (*Guard, error) {
	return NewProtected(roots, Protection{})
}

// NewProtected is New with paths inside the roots that are refused anyway.
func NewProtected(roots []string, p Protection) (*Guard, error) {
	if len(roots) == 0 {
		return nil, errors.New("no allowed roots configured; give at least one absolute directory")
	}
	g := &Guard{}
	for i, r := range roots {
		if r == "" {
			return nil, fmt.Errorf("allowed root #%d is empty; give an absolute directory", i+1)
		}
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("allowed root %q is relative; give an absolute directory", r)
		}
		clean := filepath.Clean(r)
		real, err := filepath.EvalSymlinks(clean)
		if err != nil {
			return nil, fmt.Errorf("allowed root %q: %w", r, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("allowed root %q: %w", r, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("allowed root %q is not a directory", r)
		}
		if !slices.Contains(g.roots, real) {
			g.roots = append(g.roots, real)
		}
		if !slices.Contains(g.given, clean) {
			g.given = append(g.given, clean)
		}
	}
	g.protect = newProtection(p, g.roots)
	return g, nil
}

// Roots returns the resolved roots. The slice is a copy the caller may keep.
func (g *Guard) Roots() []string { return slices.Clone(g.roots) }

// Resolve turns target (absolute, or relative to workspaceRoot) into an
// absolute, symlink-resolved path inside an allowed root, or returns a
// *Error saying why not. Unexpected I/O failures (a permission error while
// resolving, a symlink loop) are returned as plain wrapped errors.
//
// A non-empty workspaceRoot confines the session: the target, absolute or
// relative, must resolve inside the workspace (resolved through symlinks
// like the roots), or ReasonOutsideWorkspace names both. A workspace
// outside the roots is refused rather than silently ignored, and its
// refusal says nothing about what exists outside them.
//
// ".." is checked twice. The lexically cleaned path must be inside a root
// (ReasonOutsideRoots otherwise), and the path is then walked one component
// at a time the way the kernel does, following symlinks and applying ".." to
// the real directory reached so far; the result must also be inside a root
// (ReasonSymlinkEscape otherwise). The returned path is the walked one, so it
// names the same file as open(2) on target would. A final symlink is
// followed even if it dangles, since writing through it would create its
// target.
func (g *Guard) Resolve(target, workspaceRoot string) (string, error) {
	return g.resolve(target, workspaceRoot, true, nil)
}

// ResolveFrom is Resolve with base as the directory relative targets
// resolve against, without confining the target to it: for an edit of a
// session without a workspace root, whose relative paths are named from
// the directory the model's own path implies.
func (g *Guard) ResolveFrom(target, base string) (string, error) {
	return g.resolve(target, base, false, nil)
}

// Workspace resolves a workspace root as Resolve does: its real path, or
// a ReasonWorkspaceNotAllowed refusal.
func (g *Guard) Workspace(workspaceRoot string) (string, error) {
	return g.resolveWorkspace(workspaceRoot)
}

func (g *Guard) resolve(target, workspaceRoot string, confine bool, s *Scope) (string, error) {
	ws := ""
	if workspaceRoot != "" {
		var err error
		if ws, err = g.resolveWorkspace(workspaceRoot); err != nil {
			return "", err
		}
	}
	abs := target
	if !filepath.IsAbs(target) {
		if ws == "" {
			return "", &Error{
				Reason: ReasonRelativePath,
				Msg:    fmt.Sprintf("target %q is relative and no workspace root was given to resolve it against; give an absolute path or a workspace root", target),
			}
		}
		// Not filepath.Join: it would clean ".." lexically, and the walk
		// below must see it to resolve it against real directories.
		abs = ws + string(filepath.Separator) + target
	}

	lexical := filepath.Clean(abs)
	if !g.lexicallyInside(lexical) {
		return "", &Error{
			Reason: ReasonOutsideRoots,
			Path:   lexical,
			Msg:    fmt.Sprintf("target %q resolves to %s, outside the allowed roots (%s); give a path inside one of them", target, lexical, g.rootList()),
		}
	}

	w, err := g.walk(abs)
	// Check the roots before reporting anything else, so nothing is said
	// about what exists outside them: not where the walk went once it
	// left them, nor what it found there.
	if w.left || !g.inside(w.path) {
		msg := fmt.Sprintf("target %q leads outside the allowed roots (%s) on the way; give a path that stays inside them", target, g.rootList())
		if w.escapeLink != "" {
			msg = fmt.Sprintf("target %q leads outside the allowed roots (%s) through the symlink %s -> %s; give a path inside them that does not go through that symlink", target, g.rootList(), w.escapeLink, w.escapeText)
		}
		return "", &Error{Reason: ReasonSymlinkEscape, Path: lexical, Msg: msg}
	}
	if confine && ws != "" && !Within(ws, w.path) {
		return "", outsideWorkspace(target, w.path, ws)
	}
	if w.final && (w.finalErr != nil || !w.finalInfo.IsDir()) {
		// The target is no directory: nothing can be inside it, and the
		// git rules need not look for HEAD and .git there.
		s.notDir(w.path)
	}
	// Before anything about existence: a protected path is refused as
	// such whether or not its directory exists yet.
	if m, ok, _ := g.protected(w.path, openByPath, s); ok {
		return "", g.ProtectedError(w.path, m)
	}
	if err != nil {
		return "", fmt.Errorf("resolving target %q: %w", target, err)
	}
	if w.notDir {
		return "", &Error{Reason: ReasonParentMissing, Path: w.missing,
			Msg: fmt.Sprintf("%s is not a directory, so target %q cannot be written below it; write into a directory", w.missing, target)}
	}
	if w.missing != "" {
		// Missing directories are made when the file is written, inside
		// the root (package confine), as editors and agents expect.
		return w.path, nil
	}

	// What the walk's Lstat of the target said, when it looked at it.
	fi, err := w.finalInfo, w.finalErr
	if !w.final {
		fi, err = os.Lstat(w.path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return w.path, nil // a new file in an existing directory
	case err != nil:
		return "", fmt.Errorf("resolving target %q: %w", target, err)
	case fi.IsDir():
		return "", &Error{
			Reason: ReasonIsDirectory,
			Path:   w.path,
			Msg:    fmt.Sprintf("target %q is the directory %s; give the path of a file", target, w.path),
		}
	case !fi.Mode().IsRegular():
		return "", &Error{
			Reason: ReasonSpecialFile,
			Path:   w.path,
			Msg:    fmt.Sprintf("target %q is a %s (%s), not a regular file; only regular files can be written", target, kind(fi.Mode()), w.path),
		}
	}
	return w.path, nil
}

// OutsideWorkspace is the refusal of path (resolved), outside the session's
// workspace ws (resolved); target is the path as the client gave it.
func OutsideWorkspace(target, path, ws string) error { return outsideWorkspace(target, path, ws) }

func outsideWorkspace(target, path, ws string) *Error {
	named := ""
	if target != path {
		named = fmt.Sprintf("target %q resolves to ", target)
	}
	return &Error{Reason: ReasonOutsideWorkspace, Path: path, Workspace: ws,
		Msg: fmt.Sprintf("%s%s, outside the session's workspace %s; a session with a workspace root writes only inside it. "+
			"Give a path inside %s, or begin a session for that workspace", named, path, ws, ws)}
}

// resolveWorkspace returns the real path of the workspace root, or a
// ReasonWorkspaceNotAllowed error. The workspace itself may be reached
// through a symlink from outside the roots; only where it leads matters.
//
// A workspace outside the roots is refused with one message, whether it
// exists or not, is a directory or not, and wherever its symlinks lead:
// the refusal must not let a client probe what exists outside the roots.
func (g *Guard) resolveWorkspace(ws string) (string, error) {
	refuse := func(path, format string, args ...any) error {
		return &Error{Reason: ReasonWorkspaceNotAllowed, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if !filepath.IsAbs(ws) {
		return "", refuse("", "workspace root %q is not absolute; give the absolute path of the workspace directory", ws)
	}
	clean := filepath.Clean(ws)
	outside := func() error {
		return refuse(clean, "workspace root %q is not inside the allowed roots (%s); use a workspace inside one of them", ws, g.rootList())
	}
	w, err := g.walk(ws)
	if w.left || !g.inside(w.path) {
		return "", outside()
	}
	if err != nil {
		// Failing closed: a workspace we cannot resolve cannot be shown to
		// be inside the roots.
		return "", refuse(clean, "workspace root %q cannot be resolved (%v); give an accessible directory inside the allowed roots (%s)", ws, err, g.rootList())
	}
	if w.missing != "" && !w.notDir {
		return "", refuse(clean, "workspace root %q does not exist; give an existing directory inside the allowed roots (%s)", ws, g.rootList())
	}
	fi, err := os.Stat(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", refuse(clean, "workspace root %q does not exist; give an existing directory inside the allowed roots (%s)", ws, g.rootList())
	}
	if err != nil {
		return "", refuse(clean, "workspace root %q cannot be read (%v); give an accessible directory", ws, err)
	}
	if w.notDir || !fi.IsDir() {
		return "", refuse(clean, "workspace root %q is not a directory; give the workspace directory", ws)
	}
	return w.path, nil
}

// inside reports whether the clean absolute path p is one of the resolved
// roots or below one.
func (g *Guard) inside(p string) bool {
	return slices.ContainsFunc(g.roots, func(root string) bool { return Within(root, p) })
}

// lexicallyInside is inside, also accepting the roots as configured, for a
// path whose symlinks have not been resolved yet.
func (g *Guard) lexicallyInside(p string) bool {
	return g.inside(p) || slices.ContainsFunc(g.given, func(root string) bool { return Within(root, p) })
}

// Within reports whether the clean absolute path p equals root or lies below
// it, comparing whole components so that /x/ab is not within /x/a.
func Within(root, p string) bool {
	if p == root || root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, root) && p[len(root)] == filepath.Separator
}

func (g *Guard) rootList() string { return strings.Join(g.roots, ", ") }

// kind names a non-regular file type in words a user recognises.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	default:
		return "special file"
	}
}
