package elide_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/elide"
	"github.com/orion-agent/orion/internal/validate"
)

// bigCase is a Go file of n functions and a text that rewrites the middle
// one, adds k new functions after it and one inside the next, and leaves
// the rest out.
func bigCase(n, k int) (orig, text []byte) {
	var o, t strings.Builder
	o.WriteString("package big\n\n")
	for i := range n {
		fmt.Fprintf(&o, "func f%d(x int) int {\n\ty := x * %d\n\treturn y + %d\n}\n\n", i, i, i)
	}
	t.WriteString("package big\n\n// ... existing code ...\n\n")
	m := n / 2
	fmt.Fprintf(&t, "func f%d(x int) int {\n\ty := x * %d\n\treturn y - %d\n}\n\n", m, m, m)
	for i := range k {
		fmt.Fprintf(&t, "func g%d(x int) int {\n\treturn x + %d\n}\n\n", i, i)
	}
	// A new function right after a placeholder, its lines looked for in
	// the whole file before the anchor after it is.
	fmt.Fprintf(&t, "func f%d(x int) int {\n// ... existing code ...\n", m+1)
	t.WriteString("func g(x int) int {\n\treturn x\n}\n")
	fmt.Fprintf(&t, "\nfunc f%d(x int) int {\n// ... existing code ...\n", m+2)
	return []byte(o.String()), []byte(t.String())
}

// BenchmarkMerge merges a text into a file of 10,000 functions (50,000
// lines) that adds 1,001 new ones.
func BenchmarkMerge(b *testing.B) {
	orig, text := bigCase(10000, 1000)
	el := validate.NewPlaceholderLines("big.go", text, orig)
	b.SetBytes(int64(len(orig) + len(text)))
	for b.Loop() {
		if _, _, err := elide.Merge(orig, text, el); err != nil {
			b.Fatal(err)
		}
	}
}
