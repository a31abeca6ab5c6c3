package contentlog

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

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

// writeVecAt writes bufs one after another from off, in one pwritev for
// as many of them as the kernel takes at once: a record's header and its
// large payload, written from where it is, cost one system call, not two.
// It may change bufs.
func (f osFile) writeVecAt(bufs [][]byte, off int64) error {
	fd := int(f.Fd())
	for {
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
		if len(bufs) == 0 {
			return nil
		}
		n, err := unix.Pwritev(fd, bufs[:min(len(bufs), maxIOV)], off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: err}
		}
		if n == 0 {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: io.ErrShortWrite}
		}
		off += int64(n)
		for n > 0 {
			k := min(n, len(bufs[0]))
			bufs[0] = bufs[0][k:]
			n -= k
			if len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
	}
}

// maxIOV is the most buffers one pwritev takes (IOV_MAX).
const maxIOV = 1024

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

// Holes returns the next range of [from, size) that holds no written data:
// a hole, blocks reserved by fallocate but never written (ext4 and XFS report
// those as holes too), or the part past the file's end. ok is false when
// there is none. A file system that cannot tell reports its whole length as
// data, so only the part past its end is found.
func (f osFile) Holes(from, size int64) (start, end int64, ok bool) {
	fd := int(f.Fd())
	hole, err := unix.Seek(fd, from, unix.SEEK_HOLE)
	if err != nil {
		// ENXIO: from is at or past the end, all hole from there.
		// Anything else: no help from the file system; fill it all.
		hole = from
	}
	if hole >= size {
		return 0, 0, false
	}
	data, err := unix.Seek(fd, hole, unix.SEEK_DATA)
	if err != nil {
		if !errors.Is(err, unix.ENXIO) {
			return hole, size, true
		}
		data = size
	}
	return hole, min(data, size), true
}

// zfsSuperMagic is ZFS's f_type, which x/sys does not name.
const zfsSuperMagic = 0x2fc12fc1

// prepares reports whether segments in dir are worth preparing: on a file
// system that writes every overwrite elsewhere (btrfs, ZFS), a block
// written with zeros first gains nothing, and btrfs even writes reserved
// blocks in place the first time, which an overwrite would lose.
func prepares(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return true
	}
	switch int64(st.Type) {
	case unix.BTRFS_SUPER_MAGIC, zfsSuperMagic:
		return false
	}
	return true
}
