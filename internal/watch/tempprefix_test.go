//go:build unix

package watch_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/watch"
)

// watch keeps its own copy of the prefix so it does not depend on the
// unix-only atomicfile package; this keeps the two from drifting apart.
func TestTempPrefixMatchesAtomicfile(t *testing.T) {
	if got, want := watch.TempPrefix, atomicfile.TempPrefix; got != want {
		t.Fatalf("watch.TempPrefix = %q, atomicfile.TempPrefix = %q", got, want)
	}
}
