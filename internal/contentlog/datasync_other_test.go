//go:build !linux

package contentlog_test

import "os"

func datasync(f *os.File) error { return f.Sync() }

func fallocate(f *os.File, size int64) error { return f.Truncate(size) }
