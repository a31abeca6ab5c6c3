//go:build !linux

package store_test

import "os"

// datasync is the system's full sync where fdatasync is missing, as the
// content log does there.
func datasync(f *os.File) error { return f.Sync() }
