package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace moves oldpath to newpath atomically unless newpath exists,
// in which case it returns ErrExists. It uses renameatx_np(RENAME_EXCL) and
// falls back to link(2) on file systems without it.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.RenameatxNp(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_EXCL)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return ErrExists
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return linkNoReplace(oldpath, newpath)
	}
	return &os.LinkError{Op: "renameatx_np", Old: oldpath, New: newpath, Err: err}
}
