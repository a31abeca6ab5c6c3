//go:build unix

package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/pathguard"
)

var errNotDir = syscall.ENOTDIR

// Dir is an open directory inside an allowed root. Every name given to its
// methods is a single path element, looked up in this directory and never
// followed if it is a symlink, so nothing done through a Dir can land
// outside it. A Dir is not safe for concurrent Close.
type Dir struct {
	f *os.File
	// Path is the directory's absolute path as it was checked, for
	// messages and replies.
	Path  string
	guard *pathguard.Guard
	// held is set while a request's view keeps the directory open for
	// its later steps (see FS.Scoped): Close then leaves it open.
	held bool
	// named is set when the kernel's name of the directory was compared
	// with Path at its open.
	named bool
}

// Info is what Lstat tells of a directory entry.
type Info struct {
	Mode     fs.FileMode
	Size     int64
	Uid, Gid uint32
	Dev, Ino uint64
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

// Close releases the directory's descriptor, unless a request's view
// keeps it for the request's later steps.
func (d *Dir) Close() error {
	if d.held {
		return nil
	}
	return d.f.Close()
}

// Join names an entry of d as an absolute path, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.Path, name) }

// checkName refuses anything but one plain path element.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("%q is not a single file name", name)
	}
	return nil
}

// Lstat describes the entry name without following it. A missing entry
// is an error satisfying errors.Is(err, fs.ErrNotExist).
func (d *Dir) Lstat(name string) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Info{}, &os.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return infoOf(&st), nil
}

func infoOf(st *unix.Stat_t) Info {
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	return Info{Mode: mode, Size: st.Size, Uid: st.Uid, Gid: st.Gid, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
}

// OpenRegular opens the regular file name for reading. Anything else is
// refused before it is opened, so a FIFO, a device or a socket planted at a
// target never blocks the daemon or feeds it endless bytes: a symlink (the
// target was resolved through symlinks when it was checked, so one now is a
// change), a directory, or a special file. The descriptor is checked again
// after the open, since the entry may be swapped between the two.
func (d *Dir) OpenRegular(name string) (*os.File, error) {
	before, err := d.Lstat(name)
	if err != nil {
		return nil, err
	}
	if err := d.regular(name, before); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should a FIFO appear between the Lstat and the open, the
	// open returns at once instead of waiting for a writer.
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, d.regular(name, Info{Mode: fs.ModeSymlink})
		}
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: d.Join(name), Err: err}
	}
	if now := infoOf(&st); !now.Mode.IsRegular() {
		unix.Close(fd)
		return nil, d.regular(name, now)
	}
	// Regular files ignore O_NONBLOCK; clearing it keeps the descriptor
	// ordinary for os.File.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: d.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// regular returns nil when info is a regular file, else the refusal.
func (d *Dir) regular(name string, info Info) error {
	path := d.Join(name)
	switch {
	case info.Mode.IsRegular():
		return nil
	case info.Mode&fs.ModeSymlink != 0:
		return &pathguard.Error{Reason: pathguard.ReasonPathChanged, Path: path,
			Msg: fmt.Sprintf("%s is now a symlink; it was a file (or absent) when the path was checked, so it is not followed. Check the path and begin a new session", path)}
	case info.Mode.IsDir():
		return &pathguard.Error{Reason: pathguard.ReasonIsDirectory, Path: path,
			Msg: fmt.Sprintf("%s is a directory; give the path of a file", path)}
	default:
		return &pathguard.Error{Reason: pathguard.ReasonSpecialFile, Path: path,
			Msg: fmt.Sprintf("%s is a %s, not a regular file; only regular files are read or written", path, pathguard.Kind(info.Mode))}
	}
}

// CheckWritable refuses to replace or remove name unless it is missing or
// a regular file: a directory, a special file, or a symlink that stands
// where the checked file was.
func (d *Dir) CheckWritable(name string) error {
	info, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Mode.IsRegular() {
		return nil
	}
	return d.regular(name, info)
}

// CreateExclusive creates the new file name for writing with mode perm.
// It fails if anything, a symlink included, is already at name.
func (d *Dir) CreateExclusive(name string, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: d.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// Rename moves oldname over newname, both in d, replacing newname.
func (d *Dir) Rename(oldname, newname string) error {
	if err := checkNames(oldname, newname); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), oldname, d.fd(), newname); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: err}
	}
	return nil
}

// ErrExists is returned by RenameNoReplace when newname exists.
var ErrExists = fs.ErrExist

// RenameNoReplace moves oldname to newname, both in d, unless newname
// exists (then an error satisfying errors.Is(err, fs.ErrExist)).
func (d *Dir) RenameNoReplace(oldname, newname string) error {
	if err := checkNames(oldname, newname); err != nil {
		return err
	}
	err := renameExclusive(d.fd(), oldname, newname)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		// ENOSYS: no such call (Linux before 3.15). EINVAL (or ENOTSUP):
		// the file system does not support the flag (older overlayfs,
		// NFS, FUSE).
		return d.linkNoReplace(oldname, newname)
	}
	return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: err}
}

// linkNoReplace is the fallback where the file system has no no-replace
// rename: link(2) never replaces; then the old name is dropped.
func (d *Dir) linkNoReplace(oldname, newname string) error {
	if err := unix.Linkat(d.fd(), oldname, d.fd(), newname, 0); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return &os.LinkError{Op: "link", Old: d.Join(oldname), New: d.Join(newname), Err: fs.ErrExist}
		}
		return &os.LinkError{Op: "link", Old: d.Join(oldname), New: d.Join(newname), Err: err}
	}
	// The content is in place under its final name; a leftover second
	// link is found by the temp cleaner, so failing here is not failing.
	_ = unix.Unlinkat(d.fd(), oldname, 0)
	return nil
}

func checkNames(names ...string) error {
	for _, n := range names {
		if err := checkName(n); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the file name (never a directory).
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// Sync fsyncs the directory, making renames and removals in it durable.
func (d *Dir) Sync() error { return d.f.Sync() }

// StillAt reports whether the kernel still names d by the path it was
// opened for, as a request's view checks a kept directory before each
// use: false once it moved, or a directory on its path was swapped for
// a symlink. known is false where the kernel names no open directory: a
// caller then opens the path again to tell (SameAs).
func (d *Dir) StillAt() (still, known bool) {
	if !d.named {
		return false, false
	}
	same, _ := kernelPathIs(d.f, d.Path)
	return same, true
}

// SameAs reports whether d and o are one directory (the same file of the
// same file system), however each was reached: a caller holding d since
// an earlier step tells whether its path still leads to it.
func (d *Dir) SameAs(o *Dir) bool {
	if d == o {
		return true
	}
	a, err := d.f.Stat()
	if err != nil {
		return false
	}
	b, err := o.f.Stat()
	return err == nil && os.SameFile(a, b)
}

// SyncFile is the directory's descriptor, for a caller that has the
// kernel sync it while it goes on (atomicfile's asynchronous syncs). It
// stays d's: nothing else is done through it, and it is not closed.
func (d *Dir) SyncFile() *os.File { return d.f }

// Names lists the directory's entries.
func (d *Dir) Names() ([]string, error) {
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path)
	defer f.Close()
	return f.Readdirnames(-1)
}
