//go:build !linux

package contentlog

// Allocate sets the file's size; where fallocate is missing the space is
// reserved as it is written.
func (f osFile) Allocate(size int64) error { return f.Truncate(size) }
