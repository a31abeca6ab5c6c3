//go:build unix

// Package confine is the daemon's only way to the files it writes for a
// model: every operation goes through a descriptor of an allowed root and
// then of the target's directory, resolved without leaving the root at any
// step (os.Root), and is named relative to that directory descriptor. A path
// checked earlier is never opened by name again, so a directory swapped for
// a symlink between the check and the use cannot redirect a write outside
// the roots (the threat model in the README's "Security model").
//
// Symlinks that stay inside a root are followed, as os.Root does. On Linux
// the kernel's own name of the opened directory is compared with the path
// the caller expects, so a redirection inside the root is refused too: a
// reply never names a file other than the one written, and a protected path
// reached through a symlink is caught at the moment of use.
package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orion-agent/orion/internal/pathguard"
)

// FS holds a descriptor of every allowed root for the daemon's life.
type FS struct {
	roots []root
	guard *pathguard.Guard
	// workspace, when set, confines every operation to that directory
	// (real, clean, absolute), reached through its root like the root
	// itself (see Within). Such an FS is a view sharing its parent's
	// descriptors.
	workspace string
	// scope, when set, is one request's (see Scoped).
	scope *scope
}

type root struct {
	path string // real, clean, absolute
	r    *os.Root
	// dir is the same directory as a plain descriptor, opened through
	// r, for openBeneath; nil where it could not be opened.
	dir *os.File
}

// openRoot opens the allowed root at p.
func openRoot(p string) (root, error) {
	r, err := os.OpenRoot(p)
	if err != nil {
		return root{}, err
	}
	rt := root{path: p, r: r}
	if d, err := r.OpenFile(".", openDirFlags, 0); err == nil {
		rt.dir = d
	}
	return rt, nil
}

func (r root) close() error {
	if r.dir != nil {
		r.dir.Close()
	}
	return r.r.Close()
}

// openDir opens the directory rel inside r (see openBeneath). checked is
// true when the open itself made sure it is a directory.
func (r root) openDir(rel, name string) (file *os.File, checked bool, err error) {
	if r.dir != nil {
		if file, err, ok := openBeneath(int(r.dir.Fd()), rel, name); ok {
			return file, true, err
		}
	}
	file, err = r.r.OpenFile(rel, openDirFlags, 0)
	return file, false, err
}

// openDirFlags open a directory and nothing else: O_DIRECTORY fails at
// once on a FIFO swapped in where a directory was, which a plain open would
// wait on for a writer, holding the request (and the session) forever.
const openDirFlags = os.O_RDONLY | syscall.O_DIRECTORY

// errEscapes is os.Root's (unexported) error for a path that leaves the
// root, captured once so it can be told from a missing directory.
var errEscapes = func() error {
	r, err := os.OpenRoot("/")
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Open("..")
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
}()

// New opens every root of g. The guard also says which paths inside the
// roots are protected; they are refused here, at the moment of use, as
// well as when a session begins.
func New(g *pathguard.Guard) (*FS, error) {
	f := &FS{guard: g}
	for _, p := range g.Roots() {
		r, err := openRoot(p)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("opening allowed root %s: %w", p, err)
		}
		f.roots = append(f.roots, r)
	}
	return f, nil
}

// Within returns a view of f confined to the directory workspace (its real
// path, as pathguard.Guard.Workspace returned it): every directory is
// opened through an os.Root of the workspace, itself opened through the
// allowed root, so a symlink swapped in later that leads out of the
// workspace is refused at the moment of use (ReasonOutsideWorkspace), as
// one leading out of the roots is. An empty workspace returns f. The view
// shares f's descriptors: closing it does nothing.
func (f *FS) Within(workspace string) *FS {
	if workspace == "" {
		return f
	}
	return &FS{roots: f.roots, guard: f.guard, workspace: filepath.Clean(workspace), scope: f.scope}
}

// Extend returns an FS for g, whose roots include every root of f: the
// descriptors f holds are shared, and only g's new roots are opened. From
// then on the returned FS owns them all; f must not be closed.
func (f *FS) Extend(g *pathguard.Guard) (*FS, error) {
	if f.workspace != "" {
		return nil, errors.New("confine: Extend of a workspace view")
	}
	held := make(map[string]root, len(f.roots))
	for _, r := range f.roots {
		held[r.path] = r
	}
	n := &FS{guard: g}
	var opened []root
	for _, p := range g.Roots() {
		if r, ok := held[p]; ok {
			n.roots = append(n.roots, r)
			delete(held, p)
			continue
		}
		r, err := openRoot(p)
		if err != nil {
			for _, o := range opened {
				o.close()
			}
			return nil, fmt.Errorf("opening allowed root %s: %w", p, err)
		}
		opened = append(opened, r)
		n.roots = append(n.roots, r)
	}
	if len(held) > 0 {
		for _, o := range opened {
			o.close()
		}
		return nil, errors.New("confine: Extend would drop an allowed root")
	}
	return n, nil
}

// Close releases the roots' descriptors, or, for a request's view (see
// Scoped), the directories the request opened.
func (f *FS) Close() error {
	if f.scope != nil {
		return f.scope.close()
	}
	if f.workspace != "" {
		return nil // a view: its parent owns the descriptors
	}
	var errs []error
	for _, r := range f.roots {
		errs = append(errs, r.close())
	}
	f.roots = nil
	return errors.Join(errs...)
}

// rootOf returns the outermost root holding the clean absolute path p, and
// p relative to it. The outermost one, because a symlink from a nested root
// into its parent root is as allowed as the parent root itself.
func (f *FS) rootOf(p string) (root, string, bool) {
	best := -1
	for i, r := range f.roots {
		if pathguard.Within(r.path, p) && (best < 0 || len(r.path) < len(f.roots[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return root{}, "", false
	}
	rel, err := filepath.Rel(f.roots[best].path, p)
	if err != nil {
		return root{}, "", false
	}
	return f.roots[best], rel, true
}

// OpenDir opens the directory dir (absolute, as a guard resolved it) inside
// its root. It fails with a *pathguard.Error when dir is outside every root,
// leads out of its root through a symlink, is missing or is not a
// directory, or (on Linux) now names another directory than dir because
// something on the way was swapped since dir was resolved. Protection is
// checked per file, by OpenParent: a lifted file may sit in a protected
// directory.
func (f *FS) OpenDir(dir string) (*Dir, error) {
	dir = filepath.Clean(dir)
	if f.scope != nil {
		return f.scope.openDir(f, dir)
	}
	return f.openDir(dir)
}

// InRoots reports whether the absolute path p lies in one of f's roots,
// where OpenDir can open it: for a caller that tries many directories
// (the project's settings looked up to "/"), asking costs no refusal
// built for each one outside.
func (f *FS) InRoots(p string) bool {
	_, _, ok := f.rootOf(filepath.Clean(p))
	return ok
}

func (f *FS) openDir(dir string) (*Dir, error) {
	if !filepath.IsAbs(dir) {
		return nil, &pathguard.Error{Reason: pathguard.ReasonRelativePath, Path: dir,
			Msg: fmt.Sprintf("directory %q is not absolute", dir)}
	}
	r, rel, ok := f.rootOf(dir)
	if !ok {
		return nil, &pathguard.Error{Reason: pathguard.ReasonOutsideRoots, Path: dir,
			Msg: fmt.Sprintf("%s is outside the allowed roots (%s); give a path inside one of them", dir, strings.Join(f.guard.Roots(), ", "))}
	}
	var file *os.File
	var checked bool
	var err error
	if f.workspace != "" {
		file, checked, err = f.openInWorkspace(r, dir)
	} else {
		file, checked, err = r.openDir(rel, dir)
	}
	if err != nil {
		return nil, openDirError(dir, err)
	}
	if !checked {
		fi, err := file.Stat()
		if err != nil {
			file.Close()
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if !fi.IsDir() {
			file.Close()
			return nil, &pathguard.Error{Reason: pathguard.ReasonParentMissing, Path: dir,
				Msg: fmt.Sprintf("%s is not a directory, so nothing can be written below it; write into an existing directory", dir)}
		}
	}
	same, named := kernelPathIs(file, dir)
	if named && !same {
		// Named again for the refusal: only the rare case pays for
		// the name on the heap.
		real, _ := kernelPath(file)
		file.Close()
		return nil, moved(dir, real, f.guard.Inside(real))
	}
	return &Dir{f: file, Path: dir, guard: f.guard, named: named}, nil
}

// OpenParent opens the directory holding path and returns it with path's
// last element, the name every operation on the file uses.
func (f *FS) OpenParent(path string) (*Dir, string, error) {
	path = filepath.Clean(path)
	base := filepath.Base(path)
	if base == "." || base == ".." || base == string(filepath.Separator) {
		return nil, "", fmt.Errorf("%s: not a file name", path)
	}
	d, err := f.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, "", err
	}
	// The directory is the one checked (OpenDir compared the kernel's
	// name of it with the path), so the file's path here is its real path:
	// a protected file reached through a swapped symlink is caught too.
	if err := f.checkProtected(path); err != nil {
		d.Close()
		return nil, "", err
	}
	return d, base, nil
}

// openInWorkspace opens dir through the view's workspace, itself opened
// through the allowed root r: neither may be left through a symlink.
// checked is true when the open itself made sure dir is a directory.
func (f *FS) openInWorkspace(r root, dir string) (file *os.File, checked bool, err error) {
	if !pathguard.Within(f.workspace, dir) {
		return nil, false, pathguard.OutsideWorkspace(dir, dir, f.workspace)
	}
	if !pathguard.Within(r.path, f.workspace) {
		// The workspace is in a nested root while dir's outermost root is
		// another: reach it through the workspace's own root.
		wr, _, ok := f.rootOf(f.workspace)
		if !ok {
			return nil, false, &pathguard.Error{Reason: pathguard.ReasonWorkspaceNotAllowed, Path: f.workspace,
				Msg: fmt.Sprintf("workspace root %s is not inside the allowed roots", f.workspace)}
		}
		r = wr
	}
	wsRel, err := filepath.Rel(r.path, f.workspace)
	if err != nil {
		return nil, false, err
	}
	rel, err := filepath.Rel(f.workspace, dir)
	if err != nil {
		return nil, false, err
	}
	escapes := func(err error) bool {
		var pe *os.PathError
		return err != nil && errors.As(err, &pe) && errEscapes != nil && pe.Err == errEscapes
	}
	leavesRoot := func(err error) error {
		if escapes(err) {
			return &pathguard.Error{Reason: pathguard.ReasonSymlinkEscape, Path: f.workspace,
				Msg: fmt.Sprintf("workspace root %s now leads out of the allowed roots through a symlink; nothing was written", f.workspace)}
		}
		return err
	}
	leavesWorkspace := func(err error) error {
		if escapes(err) {
			return &pathguard.Error{Reason: pathguard.ReasonOutsideWorkspace, Path: dir, Workspace: f.workspace,
				Msg: fmt.Sprintf("%s now leads out of the session's workspace %s through a symlink; nothing was written. Give a path inside the workspace", dir, f.workspace)}
		}
		return err
	}
	if r.dir != nil {
		// The workspace opened beneath the root, then dir beneath the
		// workspace (see openBeneath).
		ws, werr, ok := r.dir, error(nil), true
		if wsRel != "." {
			ws, werr, ok = openBeneath(int(r.dir.Fd()), wsRel, f.workspace)
		}
		if ok && werr != nil {
			return nil, false, leavesRoot(werr)
		}
		if ok {
			file, err, ok := openBeneath(int(ws.Fd()), rel, dir)
			if ws != r.dir {
				ws.Close()
			}
			if ok {
				return file, true, leavesWorkspace(err)
			}
		}
	}
	ws := r.r
	if wsRel != "." {
		if ws, err = r.r.OpenRoot(wsRel); err != nil {
			return nil, false, leavesRoot(err)
		}
		defer ws.Close()
	}
	file, err = ws.OpenFile(rel, openDirFlags, 0)
	return file, false, leavesWorkspace(err)
}

func openDirError(dir string, err error) error {
	var pe *pathguard.Error
	if errors.As(err, &pe) {
		return err
	}
	var ppe *os.PathError
	if errors.As(err, &ppe) && errEscapes != nil && ppe.Err == errEscapes {
		return &pathguard.Error{Reason: pathguard.ReasonSymlinkEscape, Path: dir,
			Msg: fmt.Sprintf("%s now leads out of the allowed roots through a symlink; nothing was written there. Give a path whose symlinks stay inside the roots", dir)}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &missingDir{&pathguard.Error{Reason: pathguard.ReasonParentMissing, Path: dir,
			Msg: fmt.Sprintf("directory %s does not exist", dir)}}
	}
	if errors.Is(err, errNotDir) {
		return &pathguard.Error{Reason: pathguard.ReasonParentMissing, Path: dir,
			Msg: fmt.Sprintf("a file stands where a directory on the way to %s should be, so nothing can be written there; write into a directory", dir)}
	}
	return fmt.Errorf("opening %s: %w", dir, err)
}

// moved is the refusal for a directory that resolves elsewhere than when it
// was checked: a directory or symlink on the way changed meanwhile.
func moved(dir, real string, inside bool) error {
	if !inside {
		return &pathguard.Error{Reason: pathguard.ReasonSymlinkEscape, Path: dir,
			Msg: fmt.Sprintf("%s now leads to %s, outside the allowed roots: a directory on the way was replaced by a symlink; nothing was written", dir, real)}
	}
	return &pathguard.Error{Reason: pathguard.ReasonPathChanged, Path: dir,
		Msg: fmt.Sprintf("%s now leads to %s: a directory on the way was replaced or a symlink changed since the path was checked; nothing was written. Check the path and begin a new session", dir, real)}
}

// checkProtected refuses path when it is protected, reading the
// directories the git-partial rule looks at through descriptors of the
// roots (as every other operation here), not by a path checked earlier.
// The directories are read through the roots even in a workspace view: a
// repository's pieces above the workspace count as much as those in it.
func (f *FS) checkProtected(path string) error {
	whole := &FS{roots: f.roots, guard: f.guard, scope: f.scope}
	var ps *pathguard.Scope
	if f.scope != nil {
		ps = f.scope.paths
	}
	return f.guard.CheckProtectedScoped(ps, path, func(dir string) (pathguard.DirReader, error) {
		d, err := whole.OpenDir(dir)
		var pe *pathguard.Error
		if IsMissingDir(err) || (errors.As(err, &pe) && pe.Reason == pathguard.ReasonParentMissing) {
			return nil, nil // nothing there, or a file where the directory would be: it holds nothing
		}
		if err != nil {
			return nil, err
		}
		return gitDir{d}, nil
	})
}

// gitDir is a Dir as the git-partial rule reads it.
type gitDir struct{ *Dir }

func (d gitDir) Lstat(name string) (fs.FileMode, error) {
	info, err := d.Dir.Lstat(name)
	return info.Mode, err
}

func (d gitDir) ReadHead(name string, n int) ([]byte, error) {
	f, err := d.OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(n)))
}
