//go:build unix && !linux

package confine

import "os"

// openBeneath has no openat2 to use here: os.Root opens every directory.
func openBeneath(int, string, string) (*os.File, error, bool) { return nil, nil, false }
