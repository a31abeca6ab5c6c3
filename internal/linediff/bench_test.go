package linediff_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/linediff"
)

// file is n lines of Go-like text, with every step-th line changed when
// changed is set.
func file(n, step int, changed bool) []byte {
	var b strings.Builder
	for i := range n {
		if changed && i%step == 0 {
			fmt.Fprintf(&b, "\tx%d := compute(%d) // changed\n", i, i*7)
			continue
		}
		fmt.Fprintf(&b, "\tx%d := compute(%d)\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkDiff: a review diff of a 10,000-line file with 1% of its lines
// changed, and with a third of them changed.
func BenchmarkDiff(b *testing.B) {
	for _, tc := range []struct {
		name string
		step int
	}{{"OnePercent", 100}, {"EveryThird", 3}} {
		old, new := file(10000, tc.step, false), file(10000, tc.step, true)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(old) + len(new)))
			for b.Loop() {
				linediff.Unified("a", "b", old, new, 3)
			}
		})
	}
}
