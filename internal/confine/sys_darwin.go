package confine

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameExclusive is the kernel's no-replace rename: renameatx_np with
// RENAME_EXCL.
func renameExclusive(dirfd int, oldname, newname string) error {
	return unix.RenameatxNp(dirfd, oldname, dirfd, newname, unix.RENAME_EXCL)
}

// kernelPath is not asked of macOS (F_GETPATH); os.Root's confinement to
// the root still holds, but a redirection inside the root is not detected.
func kernelPath(*os.File) (string, bool) { return "", false }

// kernelPathIs is kernelPath(f) == want; named is false, as kernelPath's.
func kernelPathIs(*os.File, string) (same, named bool) { return false, false }
