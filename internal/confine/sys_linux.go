package confine

import (
	"os"
	"strconv"
	"sync"

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

// procFDs is a descriptor of /proc/self/fd, opened once (-1 where it
// cannot be): a descriptor's link read through it skips resolving
// /proc/self/fd again, a third of the look's cost.
var procFDs = sync.OnceValue(func() int {
	fd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// kernelPathIs reports whether the kernel's current name of the open
// directory f is want, as kernelPath(f) == want would, without putting
// the name on the heap: a request's view asks it before every use of a
// kept directory. named is false where the kernel names no directory.
func kernelPathIs(f *os.File, want string) (same, named bool) {
	if dir := procFDs(); dir >= 0 {
		var buf [512]byte
		n, err := unix.Readlinkat(dir, strconv.Itoa(int(f.Fd())), buf[:])
		if err == nil && n > 0 && n < len(buf) && buf[0] == '/' {
			return string(buf[:n]) == want, true
		}
		// A longer name, or no answer here: asked the usual way.
	}
	real, named := kernelPath(f)
	return named && real == want, named
}
