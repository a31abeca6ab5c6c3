package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteBack asks the kernel to start writing n bytes of f from off
// back to the disk, without waiting: the fsync that later makes the file
// durable waits for its last stretch only. Only a hint: an error here is
// met again, and reported, by that fsync.
func startWriteBack(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
