//go:build !linux

package mcpserver

import (
	"os"
	"time"
)

// fileBirth: without statx, the modification time stands in.
func fileBirth(_ *os.File, fi os.FileInfo) time.Time { return fi.ModTime() }

func fileAccess(fi os.FileInfo) time.Time { return fi.ModTime() }
