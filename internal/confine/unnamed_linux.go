package confine

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"

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

// noEmptyPath is set once linkat with AT_EMPTY_PATH was refused where the
// link through /proc then succeeded: it needs privilege
// (CAP_DAC_READ_SEARCH) on kernels before 6.10, and it will not be granted
// later.
var noEmptyPath atomic.Bool

func (d *Dir) linkUnnamed(f *os.File, name string) error {
	// By the descriptor itself where that is allowed: through /proc the
	// kernel walks a path of four names first, a third of a small file's
	// link. Through /proc, which any process may do with its own
	// descriptor, otherwise.
	var err error = unix.ENOENT
	refused := false
	if !noEmptyPath.Load() {
		err = unix.Linkat(int(f.Fd()), "", d.fd(), name, unix.AT_EMPTY_PATH)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) {
			refused = true
			err = unix.ENOENT
		}
	}
	if errors.Is(err, unix.ENOENT) {
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), d.fd(), name, unix.AT_SYMLINK_FOLLOW)
		// ENOENT is also a target's: a directory removed meanwhile.
		// Only a link that /proc then made tells that the descriptor's
		// was refused for want of privilege.
		if refused && err == nil {
			noEmptyPath.Store(true)
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	}
	return err
}
