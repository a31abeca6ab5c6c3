//go:build !linux

package contentlog

// writeVecAt writes bufs one after another from off.
func (f osFile) writeVecAt(bufs [][]byte, off int64) error {
	for _, b := range bufs {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}

// Allocate sets the file's size; where fallocate is missing the space is
// reserved as it is written.
func (f osFile) Allocate(size int64) error { return f.Truncate(size) }

// Holes reports only the part of [from, size) past the file's end: without
// Linux's SEEK_HOLE over reserved blocks, the rest is taken as written.
func (f osFile) Holes(from, size int64) (start, end int64, ok bool) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, false
	}
	start = max(from, st.Size())
	if start >= size {
		return 0, 0, false
	}
	return start, size, true
}

// prepares is false: without SEEK_HOLE over reserved blocks there is no
// telling what was written, and APFS, like other file systems that write
// every overwrite elsewhere, would gain nothing from zeros written first.
func prepares(dir string) bool { return false }
