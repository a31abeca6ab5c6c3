package merge_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/orion-agent/orion/internal/merge"
)

// BenchmarkMerge3: a 10,000-line file, one side changing every 50th line
// from the first, the other every 50th from the 25th: 400 disjoint hunks.
func BenchmarkMerge3(b *testing.B) {
	var base, ours, theirs bytes.Buffer
	for i := range 10000 {
		line := fmt.Sprintf("\tline %d of the file\n", i)
		base.WriteString(line)
		ours.WriteString(map[bool]string{true: "\tours " + line[1:], false: line}[i%50 == 0])
		theirs.WriteString(map[bool]string{true: "\ttheirs " + line[1:], false: line}[i%50 == 25])
	}
	b.SetBytes(int64(base.Len()))
	for b.Loop() {
		if r := merge.Merge3(base.Bytes(), ours.Bytes(), theirs.Bytes()); !r.Clean {
			b.Fatal("conflict")
		}
	}
}
