package confine

import "testing"

// ThroughOSRoot makes every directory open until the test ends go through
// os.Root, as on a kernel without openat2, and reports whether there is
// another way for it to have gone.
func ThroughOSRoot(t testing.TB) bool {
	old := noOpenat2.Load()
	noOpenat2.Store(true)
	t.Cleanup(func() { noOpenat2.Store(old) })
	return true
}

// LinkThroughProc makes every unnamed file linked until the test ends go
// through /proc, as where AT_EMPTY_PATH needs a privilege the daemon
// lacks.
func LinkThroughProc(t testing.TB) {
	old := noEmptyPath.Load()
	noEmptyPath.Store(true)
	t.Cleanup(func() { noEmptyPath.Store(old) })
}

// KeepLinkWay puts back, when the test ends, the way unnamed files are
// linked (LinksByDescriptor), which a test may change.
func KeepLinkWay(t testing.TB) {
	old := noEmptyPath.Load()
	t.Cleanup(func() { noEmptyPath.Store(old) })
}

// LinksByDescriptor says whether unnamed files are still linked by their
// descriptor (AT_EMPTY_PATH) rather than through /proc.
func LinksByDescriptor() bool { return !noEmptyPath.Load() }
