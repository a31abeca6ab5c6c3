//go:build !linux

package attack

import "testing"

// lowerFDLimit needs prlimit, which only Linux has, to lower another
// process's RLIMIT_NOFILE.
func lowerFDLimit(t *testing.T, pid, n int) {
	t.Helper()
	t.Skip("lowering oriond's RLIMIT_NOFILE from outside needs Linux's prlimit")
}
