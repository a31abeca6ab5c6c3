//go:build !linux

package confine

import (
	"io/fs"
	"os"
)

func (d *Dir) createUnnamed(fs.FileMode) (*os.File, error) { return nil, ErrNoUnnamed }

func (d *Dir) linkUnnamed(*os.File, string) error { return ErrNoUnnamed }
