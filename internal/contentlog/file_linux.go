package contentlog

import "golang.org/x/sys/unix"

// Sync is fdatasync: a preallocated segment's size never changes, so its
// data is all there is to sync.
func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// Allocate reserves size bytes of disk for the file, so that writes into it
// neither fail for lack of space nor change its size.
func (f osFile) Allocate(size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch err {
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP:
			return f.Truncate(size)
		}
		return err
	}
}
