// Package sibling finds a companion binary: the test and benchmark commands
// are built into the same directory as oriond, so that is where they look
// first.
package sibling

import (
	"os"
	"path/filepath"
)

// Binary returns the path of name next to the running executable if it
// exists there, else name itself, for a lookup in $PATH.
func Binary(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return name
	}
	p := filepath.Join(filepath.Dir(exe), name)
	if _, err := os.Stat(p); err != nil {
		return name
	}
	return p
}
