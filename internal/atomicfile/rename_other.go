//go:build unix && !linux && !darwin

package atomicfile

// renameNoReplace moves oldpath to newpath unless newpath exists, in which
// case it returns ErrExists. These systems have no no-replace rename that
// x/sys exposes, so it always uses link(2).
func renameNoReplace(oldpath, newpath string) error {
	return linkNoReplace(oldpath, newpath)
}
