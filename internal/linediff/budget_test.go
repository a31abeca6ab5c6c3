package linediff

import (
	"math/rand/v2"
	"testing"
)

// TestPastTheBudget: a search cut short by its budget still gives edits
// that turn a into b.
func TestPastTheBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, budget := range []int64{0, 10, 1000} {
		a, b := make([]int, 3000), make([]int, 2500)
		for i := range a {
			a[i] = r.IntN(5)
		}
		for i := range b {
			b[i] = r.IntN(5)
		}
		var out []int
		at := 0
		for _, e := range diffIDs(a, b, budget) {
			out = append(out, a[at:e.A0]...)
			out = append(out, b[e.B0:e.B1]...)
			at = e.A1
		}
		out = append(out, a[at:]...)
		if len(out) != len(b) {
			t.Fatalf("budget %d: %d lines rebuilt, want %d", budget, len(out), len(b))
		}
		for i := range b {
			if out[i] != b[i] {
				t.Fatalf("budget %d: line %d differs", budget, i)
			}
		}
	}
}
