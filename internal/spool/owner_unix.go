//go:build unix

package spool

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// foreign reports whether fi belongs to another user than the daemon's.
// Whatever is imported gets written to the daemon user's files, so an entry
// someone else planted must never be imported.
func foreign(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Geteuid()
}

// checkPrivate refuses a spool directory that another user could plant
// entries in.
func checkPrivate(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("spool: %s is not a directory", dir)
	}
	if foreign(fi) {
		return fmt.Errorf("spool: %s belongs to another user; use a spool directory of your own", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("spool: %s is writable by group or others (mode %#o), so they could plant entries that get written to your files; run chmod 700 %s", dir, perm, dir)
	}
	return nil
}
