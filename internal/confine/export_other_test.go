//go:build unix && !linux

package confine

import "testing"

// ThroughOSRoot reports that os.Root is the only way here.
func ThroughOSRoot(testing.TB) bool { return false }
