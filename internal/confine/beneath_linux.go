package confine

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once the kernel said it has no openat2 (before 5.6).
var noOpenat2 atomic.Bool

// openBeneath opens the directory rel below the directory dirfd with the
// confinement os.Root gives, in one openat2 call: RESOLVE_BENEATH refuses
// every step out of dirfd (a "..", an absolute symlink, a symlink leading
// out) at the moment of the open, as os.Root's walk does component by
// component, and RESOLVE_NO_MAGICLINKS the /proc links os.Root would
// follow. os.Root's walk costs an open per component and, for the file it
// returns, four fcntl calls and a failing epoll_ctl (a directory cannot be
// polled); this costs one open and one fcntl. name names the file for
// messages.
//
// ok is false when openat2 cannot answer (no such call, refused by a
// seccomp filter, flags the kernel does not know, a rename racing the
// walk again and again): the caller asks os.Root instead. A step out
// fails with os.Root's own error for it (errEscapes), so callers tell
// the two apart as they did.
func openBeneath(dirfd int, rel, name string) (f *os.File, err error, ok bool) {
	if noOpenat2.Load() || errEscapes == nil {
		return nil, nil, false
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 4 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch err {
		case nil:
			return os.NewFile(uintptr(fd), name), nil, true
		case unix.EINTR, unix.EAGAIN:
			// EAGAIN: a rename or mount during the walk; try again.
			continue
		case unix.ENOSYS:
			noOpenat2.Store(true)
			return nil, nil, false
		case unix.EPERM, unix.EINVAL, unix.E2BIG:
			return nil, nil, false
		case unix.EXDEV:
			return nil, &os.PathError{Op: "openat", Path: rel, Err: errEscapes}, true
		default:
			return nil, &os.PathError{Op: "openat", Path: rel, Err: err}, true
		}
	}
	return nil, nil, false
}
