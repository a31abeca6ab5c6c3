package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// gitPieces are the entries of a repository's directory that git looks
// for to recognise one (setup.c's is_git_directory: HEAD, objects/,
// refs/, or commondir) or reads from it once it has (config, packed-refs,
// hooks/, info/). A directory holding one that marks a repository (see
// heldMarker) is on its way to being one; writing another piece is how a
// model would finish it (RuleGitPartial).
var gitPieces = []string{"HEAD", "objects", "refs", "packed-refs", "commondir", "config", "hooks", "info"}

// maxGitConfig bounds the read of a file named config while looking for a
// [core] section. A larger one is taken as a repository's config: failing
// closed costs only a refused write next to a very large file named config.
const maxGitConfig = 1 << 20

// coreSection finds a [core] section header as git parses one: the name is
// case-insensitive, and the old [core.sub] and [core "sub"] forms count.
var coreSection = regexp.MustCompile(`(?im)^[ \t]*\[[ \t]*core[ \t]*[\]."]`)

// DirReader is what the git-partial rule reads of one directory. Names
// are single path elements, never followed if they are symlinks.
type DirReader interface {
	// Lstat returns the mode of the entry name, or an error satisfying
	// errors.Is(err, fs.ErrNotExist) when there is none.
	Lstat(name string) (fs.FileMode, error)
	// ReadHead returns at most n bytes from the start of the regular file
	// name.
	ReadHead(name string, n int) ([]byte, error)
	// Close releases the directory.
	Close() error
}

// OpenDirFunc opens the directory dir for the git-partial rule. A
// directory that does not exist returns a nil DirReader and a nil error:
// it holds nothing.
type OpenDirFunc func(dir string) (DirReader, error)

// gitPartial returns the git-partial match of path: the outermost
// directory inside the roots whose entry on the way to path is a git piece
// (any case, as a case-insensitive file system would name it) while the
// directory already holds another piece that marks a repository (see
// heldMarker). Only directories whose next component is a piece are opened,
// so most paths read nothing. An error other than a missing directory is
// returned, for the caller to fail closed.
func (g *Guard) gitPartial(path string, open OpenDirFunc) (Match, bool, error) {
	sep := string(filepath.Separator)
	// The components are looked at where they are in path, not split
	// out: a request checks its target three or four times, and most
	// paths name no piece.
	for i, j := 0, 0; i < len(path); i = j {
		for i < len(path) && path[i] == filepath.Separator {
			i++
		}
		for j = i; j < len(path) && path[j] != filepath.Separator; j++ {
		}
		piece := pieceName(path[i:j])
		if piece == "" {
			continue
		}
		// Joined only for a piece: the directory holding it, cleaned
		// as a join of the components before it.
		dir := filepath.Join(sep, path[:i])
		if !g.inside(dir) {
			continue
		}
		held, err := heldMarker(dir, piece, open)
		if err != nil {
			return Match{}, false, err
		}
		// Allowing the name .git lifts a .git directory's pieces too, as
		// it lifts its shape (RuleGitDir).
		name := ""
		if sameName(filepath.Base(dir), ".git") {
			name = ".git"
		}
		if held != "" && !g.liftedShape(path, dir, name) {
			return Match{Rule: RuleGitPartial, At: dir}, true, nil
		}
	}
	return Match{}, false, nil
}

// pieceName returns the git piece that the path component c names, or "".
// It is sameName against each piece, with c folded once: a piece's name
// is its own fold.
func pieceName(c string) string {
	if c == "" {
		return ""
	}
	c = foldName(c)
	for _, p := range gitPieces {
		if strings.EqualFold(p, c) {
			return p
		}
	}
	return ""
}

// heldMarker returns the first entry of dir, other than piece, that marks
// a repository on its way: a HEAD, packed-refs or commondir that is not a
// directory, an objects/ or refs/ directory, or a config file with a [core]
// section. hooks/ and info/ mark nothing by themselves: git does not look
// for them to recognise a repository. A directory that is already a whole
// repository returns "": RuleGitDir refuses it, or the person lifted that.
func heldMarker(dir, piece string, open OpenDirFunc) (string, error) {
	d, err := open(dir)
	if err != nil || d == nil {
		return "", err
	}
	defer d.Close()
	held := map[string]bool{}
	first := ""
	for _, m := range []string{"HEAD", "objects", "refs", "packed-refs", "commondir", "config"} {
		mode, err := d.Lstat(m)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", filepath.Join(dir, m), err)
		}
		switch m {
		case "objects", "refs":
			held[m] = mode.IsDir()
		case "config":
			if !mode.IsRegular() {
				continue // a config/ directory is a project's, not git's
			}
			head, err := d.ReadHead(m, maxGitConfig+1)
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", filepath.Join(dir, m), err)
			}
			held[m] = len(head) > maxGitConfig || coreSection.Match(head)
		default:
			held[m] = !mode.IsDir()
		}
		if held[m] && m != piece && first == "" {
			first = m
		}
	}
	if held["HEAD"] && (held["commondir"] || held["objects"] && held["refs"]) {
		return "", nil
	}
	return first, nil
}

// liftedShape is lifted for a shape matched at the directory at (or the
// name name), except that an allowed root equal to at lifts nothing unless
// it is named .git: naming a project, or the home directory, as a root is
// not asking for a repository to be assembled at its top, where git would
// find it from every directory below that has no .git of its own.
func (g *Guard) liftedShape(path, at, name string) bool {
	for _, a := range g.protect.allowed {
		if isName(a) {
			if name != "" && sameName(a, name) {
				return true
			}
			continue
		}
		if !Within(a, path) || !Within(at, a) {
			continue
		}
		if a == at && name == "" && g.isRoot(a) && !slices.Contains(g.protect.explicit, a) {
			continue
		}
		return true
	}
	return false
}

// isRoot reports whether p is one of the resolved or given roots.
func (g *Guard) isRoot(p string) bool {
	for _, r := range g.roots {
		if r == p {
			return true
		}
	}
	for _, r := range g.given {
		if r == p {
			return true
		}
	}
	return false
}

// GitPartial reports whether path is refused by RuleGitPartial, reading
// each directory through open: the confined layer passes descriptors of
// the roots, so the directory read is the one that will be written.
func (g *Guard) GitPartial(path string, open OpenDirFunc) (Match, bool, error) {
	return g.gitPartial(filepath.Clean(path), open)
}

// CheckProtectedIn is CheckProtected with the git-partial rule read
// through open rather than by path. An error reading a directory is
// returned as it is: the caller refuses the write.
func (g *Guard) CheckProtectedIn(path string, open OpenDirFunc) error {
	path = filepath.Clean(path)
	m, ok, err := g.protected(path, open, nil)
	if ok {
		return g.ProtectedError(path, m)
	}
	return err
}
