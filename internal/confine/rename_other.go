//go:build unix && !linux && !darwin

package confine

import "os"

// renameNoReplace uses link(2), which never replaces, where there is no
// renameat2.
func renameNoReplace(d *Dir, oldname, newname string) error {
	return d.linkNoReplace(oldname, newname)
}

// kernelPath is not available without /proc; os.Root's confinement to the
// root still holds, but a redirection inside the root is not detected.
func kernelPath(*os.File) (string, bool) { return "", false }
