//go:build unix

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/pathguard"
)

// dirPerm is the mode of directories made for a target, before the umask,
// as mkdir -p and every editor make them.
const dirPerm = 0o755

// MkdirAll makes dir and its missing parents inside its root, and returns
// the directories it made, outermost first. Each one is made with mkdirat
// in the directory opened before it and then opened itself without
// following symlinks, so a directory swapped for a symlink meanwhile makes
// the call fail instead of leading it out of the root. A protected dir is
// refused before anything is made.
func (f *FS) MkdirAll(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	if err := f.checkProtected(dir); err != nil {
		return nil, err
	}
	return f.mkdirAll(dir)
}

// MkdirFor is MkdirAll for the directory of the file path, refused when
// the file is protected rather than the directory: the person may have
// allowed one file inside a protected directory that does not exist yet
// (--allow-protected ~/.config/app/app.toml).
func (f *FS) MkdirFor(path string) ([]string, error) {
	path = filepath.Clean(path)
	if err := f.checkProtected(path); err != nil {
		return nil, err
	}
	return f.mkdirAll(filepath.Dir(path))
}

func (f *FS) mkdirAll(dir string) ([]string, error) {
	// The deepest existing ancestor is opened the usual way.
	existing := dir
	var missing []string
	var d *Dir
	for {
		var err error
		d, err = f.OpenDir(existing)
		if err == nil {
			break
		}
		if !IsMissingDir(err) || existing == filepath.Dir(existing) {
			return nil, err
		}
		missing = append(missing, filepath.Base(existing))
		existing = filepath.Dir(existing)
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		name := missing[i]
		if err := checkName(name); err != nil {
			d.Close()
			return made, err
		}
		err := unix.Mkdirat(d.fd(), name, dirPerm)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			d.Close()
			return made, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
		}
		if err == nil {
			made = append(made, d.Join(name))
		}
		fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		path := d.Join(name)
		d.Close()
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return made, &pathguard.Error{Reason: pathguard.ReasonPathChanged, Path: path,
					Msg: fmt.Sprintf("%s was replaced by a symlink or a file while its directories were being made; nothing was written. Check the path and begin a new session", path)}
			}
			return made, &os.PathError{Op: "open", Path: path, Err: err}
		}
		d = &Dir{f: os.NewFile(uintptr(fd), path), Path: path, guard: f.guard}
	}
	d.Close()
	return made, nil
}

// RemoveEmptyDirs removes the directories dirs (as MkdirAll returned them)
// that are empty, innermost first, and returns those it removed. One that
// is not empty (another session wrote into it meanwhile), or no longer a
// directory, is left alone: rmdir itself refuses a directory with entries,
// so nothing anyone put there is lost.
//
// Protection is not checked: removing an empty directory a failed write
// made is how a refusal leaves nothing behind, and a directory it made
// may be protected now for the very reason the write was refused (its
// making completed the shape of a repository's internals). Each one is
// still reached through its root, by name in its opened parent.
func (f *FS) RemoveEmptyDirs(dirs []string) []string {
	var removed []string
	for i := len(dirs) - 1; i >= 0; i-- {
		dir := filepath.Clean(dirs[i])
		name := filepath.Base(dir)
		if checkName(name) != nil {
			continue
		}
		d, err := f.OpenDir(filepath.Dir(dir))
		if err != nil {
			continue
		}
		if info, err := d.Lstat(name); err == nil && info.Mode.IsDir() {
			if unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR) == nil {
				removed = append(removed, dir)
				d.Sync()
			}
		}
		d.Close()
	}
	return removed
}

// missingDir marks the refusal of a directory that does not exist, the
// one refusal MkdirAll remedies.
type missingDir struct{ err *pathguard.Error }

func (m *missingDir) Error() string { return m.err.Error() }
func (m *missingDir) Unwrap() error { return m.err }

// IsMissingDir reports whether err says a directory on the way does not
// exist (rather than being a file, a symlink out, or protected).
func IsMissingDir(err error) bool {
	var m *missingDir
	return errors.As(err, &m)
}
