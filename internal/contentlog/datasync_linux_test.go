package contentlog_test

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync, what the log uses.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// fallocate reserves size bytes of f without writing them.
func fallocate(f *os.File, size int64) error { return unix.Fallocate(int(f.Fd()), 0, 0, size) }
