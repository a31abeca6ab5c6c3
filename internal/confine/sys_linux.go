package confine

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// renameExclusive is the kernel's no-replace rename: renameat2 with
// RENAME_NOREPLACE.
func renameExclusive(dirfd int, oldname, newname string) error {
	return unix.Renameat2(dirfd, oldname, dirfd, newname, unix.RENAME_NOREPLACE)
}

// kernelPath is the kernel's current name of the open directory f.
func kernelPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || len(p) == 0 || p[0] != '/' {
		return "", false
	}
	return p, true
}
