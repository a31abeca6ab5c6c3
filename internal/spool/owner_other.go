//go:build !unix

package spool

import (
	"fmt"
	"io/fs"
	"os"
)

// foreign cannot tell owners apart here; the spool's location must keep
// other users out.
func foreign(fs.FileInfo) bool { return false }

func checkPrivate(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("spool: %s is not a directory", dir)
	}
	return nil
}
