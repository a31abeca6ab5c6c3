//go:build unix

package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Chmod sets the permission bits of the regular file name. A symlink or
// anything else standing there is refused, never followed.
func (d *Dir) Chmod(name string, perm fs.FileMode) error {
	info, err := d.Lstat(name)
	if err != nil {
		return err
	}
	if !info.Mode.IsRegular() {
		return d.regular(name, info)
	}
	if err := unix.Fchmodat(d.fd(), name, uint32(perm&fs.ModePerm), 0); err != nil {
		return &os.PathError{Op: "chmod", Path: d.Join(name), Err: err}
	}
	return nil
}

// Symlink makes name a symbolic link to target, replacing a file or link
// there (never a directory): the link is made under a temporary name and
// renamed over name, so name is never missing in between.
func (d *Dir) Symlink(target, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if info, err := d.Lstat(name); err == nil && info.Mode.IsDir() {
		return &os.PathError{Op: "symlink", Path: d.Join(name), Err: unix.EISDIR}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := fmt.Sprintf(".orion-tmp-link-%s", hex.EncodeToString(rnd[:]))
	if err := unix.Symlinkat(target, d.fd(), tmp); err != nil {
		return &os.PathError{Op: "symlink", Path: d.Join(name), Err: err}
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
		return &os.LinkError{Op: "rename", Old: d.Join(tmp), New: d.Join(name), Err: err}
	}
	return nil
}
