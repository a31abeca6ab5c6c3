package confine

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace uses renameatx_np(RENAME_EXCL), falling back to link(2)
// on file systems without it.
func renameNoReplace(d *Dir, oldname, newname string) error {
	err := unix.RenameatxNp(d.fd(), oldname, d.fd(), newname, unix.RENAME_EXCL)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return d.linkNoReplace(oldname, newname)
	}
	return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: err}
}

// kernelPath is not asked of macOS (F_GETPATH); os.Root's confinement to
// the root still holds, but a redirection inside the root is not detected.
func kernelPath(*os.File) (string, bool) { return "", false }
