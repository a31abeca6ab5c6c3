package attack

import "golang.org/x/sys/unix"

// exchange swaps two paths atomically (renameatx_np RENAME_SWAP).
func exchange(a, b string) error {
	return unix.RenameatxNp(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_SWAP)
}
