package store_test

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync, what the content log uses.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
