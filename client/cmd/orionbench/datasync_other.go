//go:build !linux

package main

import "os"

// datasync is the system's full sync where fdatasync is missing (F_FULLFSYNC
// on macOS), as the daemon's content log does there.
func datasync(f *os.File) error { return f.Sync() }
