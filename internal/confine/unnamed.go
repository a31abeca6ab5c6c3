package confine

import (
	"errors"
	"io/fs"
	"os"
)

// ErrNoUnnamed reports that d's file system (or the system) cannot make a
// file without a name: the caller makes a named one instead.
var ErrNoUnnamed = errors.New("unnamed files are not supported here")

// CreateUnnamed creates a regular file in d that has no name until
// LinkUnnamed gives it one (O_TMPFILE): if the process dies first, the file
// is gone with it, and nothing is left in d. It returns ErrNoUnnamed where
// that is not possible.
func (d *Dir) CreateUnnamed(perm fs.FileMode) (*os.File, error) {
	return d.createUnnamed(perm)
}

// LinkUnnamed gives f, made by CreateUnnamed in d, the name name in d,
// failing with fs.ErrExist if name exists. The name is durable once d is
// synced.
func (d *Dir) LinkUnnamed(f *os.File, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := d.linkUnnamed(f, name); err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: d.Join(name), Err: err}
	}
	return nil
}
