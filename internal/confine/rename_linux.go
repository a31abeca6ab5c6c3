package confine

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// renameNoReplace uses renameat2(RENAME_NOREPLACE), falling back to
// link(2) where the kernel or the file system lacks it.
func renameNoReplace(d *Dir, oldname, newname string) error {
	err := unix.Renameat2(d.fd(), oldname, d.fd(), newname, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		// ENOSYS: kernel before 3.15. EINVAL (or ENOTSUP): the file
		// system does not support the flag (older overlayfs, NFS, FUSE).
		return d.linkNoReplace(oldname, newname)
	}
	return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: err}
}

// kernelPath is the kernel's current name of the open directory f.
func kernelPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || len(p) == 0 || p[0] != '/' {
		return "", false
	}
	return p, true
}
