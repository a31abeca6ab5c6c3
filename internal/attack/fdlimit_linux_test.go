package attack

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// lowerFDLimit sets the running daemon's RLIMIT_NOFILE (soft and hard, so
// nothing raises it again).
func lowerFDLimit(t *testing.T, pid, n int) {
	t.Helper()
	lim := unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
			t.Skipf("cannot lower oriond's RLIMIT_NOFILE: %v", err)
		}
		t.Fatal(err)
	}
}
