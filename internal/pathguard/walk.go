package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks bounds how many symlinks one walk follows, so a loop ends in an
// error instead of spinning. It matches Linux's limit for a single lookup
// (40) with room to spare for legitimate chains.
const maxSymlinks = 255

// walkResult says where the walk of a path ended.
type walkResult struct {
	// path is the resolved absolute path; when the walk stopped early it is
	// where it stopped joined with the unwalked remainder, so the caller can
	// still tell whether it points outside the roots.
	path string
	// missing is the first directory on the way that does not exist, or
	// that exists but is not a directory (then notDir is set).
	missing string
	notDir  bool
	// escapeLink is the first symlink, itself inside the roots, whose text
	// points outside them, and escapeText its text: the culprit to name when
	// the walk ends outside the roots.
	escapeLink, escapeText string
	// left is set when the walk stopped at an entry outside the roots
	// that is not on the way to one (see walk): the path is outside them,
	// whatever path says after a later "..".
	left bool
	// final is set when the last component was looked at and is path
	// (not a symlink followed further): finalInfo and finalErr are what
	// its Lstat said, for the caller not to look again.
	final     bool
	finalInfo fs.FileInfo
	finalErr  error
}

// walk resolves the absolute path abs one component at a time, as the kernel
// does: symlinks are followed (the last one too, even if it dangles) and ".."
// removes the last component of the real path reached so far. Unlike
// filepath.EvalSymlinks it accepts a final component that does not exist and
// reports a missing directory instead of failing.
//
// The walk looks only inside the roots and in the directories on the way
// to them (a symlink there, such as a workspace link beside a root, is
// followed). At any other entry, existing or not, it stops with left set:
// what it would find there, and where ".." would lead from there, must
// not change the answer, or a refusal would tell a client what exists
// outside the roots.
func (g *Guard) walk(abs string) (walkResult, error) {
	var w walkResult
	sep := string(filepath.Separator)
	dest := sep // always a real, existing directory
	rest := abs
	links := 0
	for {
		var comp string
		comp, rest = nextComponent(rest)
		switch comp {
		case "":
			w.path = dest
			return w, nil
		case ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		p := filepath.Join(dest, comp)
		last := strings.Trim(rest, sep) == ""
		fi, err := os.Lstat(p)
		if (err != nil || fi.Mode()&fs.ModeSymlink == 0) && !g.inside(p) && !g.onTheWay(p) {
			w.path, w.left = filepath.Join(p, rest), true
			return w, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			if last {
				w.path = p
				w.final, w.finalErr = true, err
			} else {
				w.path, w.missing = filepath.Join(p, rest), p
			}
			return w, nil
		}
		if err != nil {
			w.path = filepath.Join(p, rest)
			return w, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxSymlinks {
				w.path = filepath.Join(p, rest)
				return w, fmt.Errorf("%s: following symlinks: %w", p, syscall.ELOOP)
			}
			text, err := os.Readlink(p)
			if err != nil {
				w.path = filepath.Join(p, rest)
				return w, err
			}
			to := text
			if !filepath.IsAbs(to) {
				to = filepath.Join(dest, to)
			}
			if w.escapeLink == "" && g.inside(p) && !g.inside(filepath.Clean(to)) {
				w.escapeLink, w.escapeText = p, text
			}
			if filepath.IsAbs(text) {
				dest = sep
			}
			// The link's text takes its place; relative text is resolved
			// from dest, the directory holding the link.
			rest = text + sep + rest
			continue
		}
		if !last && !fi.IsDir() {
			w.path, w.missing, w.notDir = filepath.Join(p, rest), p, true
			return w, nil
		}
		if last {
			w.final, w.finalInfo = true, fi
		}
		dest = p
	}
}

// nextComponent splits the first component off path, skipping leading
// separators. It returns "" when no component is left.
func nextComponent(path string) (comp, rest string) {
	path = strings.TrimLeft(path, string(filepath.Separator))
	if i := strings.IndexByte(path, filepath.Separator); i >= 0 {
		return path[:i], path[i:]
	}
	return path, ""
}

// onTheWay reports whether the clean absolute path p is a root's parent,
// grandparent... up to "/": a directory the walk passes to reach a root.
func (g *Guard) onTheWay(p string) bool {
	for _, r := range g.roots {
		if Within(p, r) {
			return true
		}
	}
	return false
}
