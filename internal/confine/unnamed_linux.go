package confine

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func (d *Dir) createUnnamed(perm fs.FileMode) (*os.File, error) {
	fd, err := unix.Openat(d.fd(), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	switch {
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// EISDIR or EINVAL: a kernel without O_TMPFILE.
		return nil, ErrNoUnnamed
	case err != nil:
		return nil, &os.PathError{Op: "create unnamed file in", Path: d.Path, Err: err}
	}
	return os.NewFile(uintptr(fd), d.Join("(unnamed)")), nil
}

func (d *Dir) linkUnnamed(f *os.File, name string) error {
	// Through /proc, which any process may do with its own descriptor;
	// AT_EMPTY_PATH, where /proc is not mounted, needs privilege.
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), d.fd(), name, unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.ENOENT) {
		err = unix.Linkat(int(f.Fd()), "", d.fd(), name, unix.AT_EMPTY_PATH)
	}
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	}
	return err
}
