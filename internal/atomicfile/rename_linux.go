package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace moves oldpath to newpath atomically unless newpath exists,
// in which case it returns ErrExists. It uses renameat2(RENAME_NOREPLACE) and
// falls back to link(2) where the kernel or the file system lacks it.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return ErrExists
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		// ENOSYS: kernel before 3.15. EINVAL (or ENOTSUP): the file
		// system does not support the flag (older overlayfs, NFS, FUSE).
		return linkNoReplace(oldpath, newpath)
	}
	return &os.LinkError{Op: "renameat2", Old: oldpath, New: newpath, Err: err}
}
