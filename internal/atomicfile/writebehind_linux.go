package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBehind writes to f and, every writeBehindBytes, asks the kernel to
// start writing back what it has so far, without waiting for it: the fsync
// that makes a large file durable then waits for its last stretch only,
// not for all of it, and the disk works while the file is still being
// filled.
type writeBehind struct {
	f *os.File
	// done is what was handed to the kernel to write back, n what was
	// written.
	done, n int64
}

// writeBehindBytes is how much is written between two requests to write
// back: enough that a small file makes none.
const writeBehindBytes = 4 << 20

func (w *writeBehind) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += int64(n)
	if w.n-w.done >= writeBehindBytes {
		// Only a hint: an error here is met again, and reported, by the
		// fsync.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.done, w.n-w.done, unix.SYNC_FILE_RANGE_WRITE)
		w.done = w.n
	}
	return n, err
}
