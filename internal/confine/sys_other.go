//go:build unix && !linux && !darwin

package confine

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameExclusive does not exist here; ENOSYS sends the caller to link(2).
func renameExclusive(int, string, string) error { return unix.ENOSYS }

// kernelPath is not available without /proc; os.Root's confinement to the
// root still holds, but a redirection inside the root is not detected.
func kernelPath(*os.File) (string, bool) { return "", false }

// kernelPathIs is kernelPath(f) == want; named is false, as kernelPath's.
func kernelPathIs(*os.File, string) (same, named bool) { return false, false }
