package merge_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/merge"
)

func lines(s ...string) []byte { return []byte(strings.Join(s, "")) }

func TestMerge3(t *testing.T) {
	base := lines("a\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n")
	for _, tt := range []struct {
		name         string
		ours, theirs []byte
		want         string // "" when a conflict is expected
		conflicts    int
		oursHunks    int
	}{
		{"Disjoint", lines("A\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "b\n", "c\n", "d\n", "e\n", "f\n", "G\n"), "A\nb\nc\nd\ne\nf\nG\n", 0, 1},
		{"OnlyTheirs", base, lines("a\n", "B\n", "c\n", "d\n", "e\n", "f\n", "g\n"), "a\nB\nc\nd\ne\nf\ng\n", 0, 0},
		{"OnlyOurs", lines("a\n", "B\n", "c\n", "d\n", "e\n", "f\n", "g\n"), base, "a\nB\nc\nd\ne\nf\ng\n", 0, 1},
		{"SameChange", lines("a\n", "X\n", "c\n", "d\n", "e\n", "f\n", "G\n"), lines("a\n", "X\n", "c\n", "d\n", "e\n", "f\n", "g\n"), "a\nX\nc\nd\ne\nf\nG\n", 0, 2},
		{"Overlap", lines("a\n", "B1\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "B2\n", "c\n", "d\n", "e\n", "f\n", "g\n"), "", 1, 0},
		// Touching: ours changes b, theirs changes c. git calls it a conflict.
		{"Adjacent", lines("a\n", "B\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "b\n", "C\n", "d\n", "e\n", "f\n", "g\n"), "", 1, 0},
		{"InsertSamePlace", lines("a\n", "x\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "y\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n"), "", 1, 0},
		{"InsertTouchingChange", lines("a\n", "x\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "B\n", "c\n", "d\n", "e\n", "f\n", "g\n"), "", 1, 0},
		{"OneLineBetween", lines("a\n", "B\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "b\n", "c\n", "D\n", "e\n", "f\n", "g\n"), "a\nB\nc\nD\ne\nf\ng\n", 0, 1},
		// Ours deletes the last lines, theirs appends after them: touching.
		{"DeleteTouchingAppend", lines("a\n", "b\n", "c\n", "d\n", "e\n"), lines("a\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n", "h\n"), "", 1, 0},
		{"DeleteAndAppendApart", lines("a\n", "b\n", "c\n", "d\n", "f\n", "g\n"), lines("a\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n", "h\n"), "a\nb\nc\nd\nf\ng\nh\n", 0, 1},
		{"CRLFKept", lines("a\r\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n"), lines("a\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g"), "a\r\nb\nc\nd\ne\nf\ng", 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := merge.Merge3(base, tt.ours, tt.theirs)
			if got, want := len(r.Conflicts), tt.conflicts; got != want {
				t.Fatalf("%d conflicts, want %d: %+v", got, want, r.Conflicts)
			}
			if r.Clean != (tt.conflicts == 0) {
				t.Fatalf("Clean = %v with %d conflicts", r.Clean, len(r.Conflicts))
			}
			if r.Clean && string(r.Merged) != tt.want {
				t.Fatalf("merged %q, want %q", r.Merged, tt.want)
			}
			if !r.Clean && r.Merged != nil {
				t.Fatalf("a conflicted merge returned content %q", r.Merged)
			}
			if got := len(r.OursHunks); got != tt.oursHunks {
				t.Fatalf("%d ours hunks, want %d: %+v", got, tt.oursHunks, r.OursHunks)
			}
		})
	}
}

func TestConflictCarriesEachSide(t *testing.T) {
	base := lines("a\n", "b\n", "c\n")
	r := merge.Merge3(base, lines("a\n", "mine\n", "c\n"), lines("a\n", "yours\n", "c\n"))
	if len(r.Conflicts) != 1 {
		t.Fatalf("conflicts: %+v", r.Conflicts)
	}
	c := r.Conflicts[0]
	if c.BaseStart != 1 || c.BaseEnd != 2 || string(c.Base) != "b\n" || string(c.Ours) != "mine\n" || string(c.Theirs) != "yours\n" {
		t.Fatalf("conflict %+v", c)
	}
}

func TestBinary(t *testing.T) {
	if !merge.IsBinary([]byte("a\x00b")) || merge.IsBinary([]byte("text\n")) {
		t.Fatal("IsBinary")
	}
	late := append(bytes.Repeat([]byte("a"), 8000), 0)
	if merge.IsBinary(late) {
		t.Fatal("a NUL past 8000 bytes counts as binary; git looks at the first 8000 only")
	}
	base := []byte("x\x00\ny\nz\n")
	if r := merge.Merge3(base, []byte("X\x00\ny\nz\n"), []byte("x\x00\ny\nZ\n")); r.Clean || len(r.Conflicts) != 1 {
		t.Fatalf("binary sides both changed merged line by line: %+v", r)
	}
	if r := merge.Merge3(base, base, []byte("new\x00")); !r.Clean || string(r.Merged) != "new\x00" {
		t.Fatalf("binary with one side unchanged: %+v", r)
	}
}

// TestMergeKeepsBothSides: on random edits of random texts, a clean merge
// is the same whichever side is ours, and holds every line each side
// added; a conflicted one names regions where both sides changed.
func TestMergeKeepsBothSides(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	clean := 0
	for n := range 4000 {
		base := randLines(r, 5+r.IntN(30))
		ours, theirs := edit(r, base, "o"), edit(r, base, "t")
		m := merge.Merge3(base, ours, theirs)
		sym := merge.Merge3(base, theirs, ours)
		if m.Clean != sym.Clean || len(m.Conflicts) != len(sym.Conflicts) {
			t.Fatalf("case %d: merge is not symmetric", n)
		}
		if !m.Clean {
			continue
		}
		clean++
		if !bytes.Equal(m.Merged, sym.Merged) {
			t.Fatalf("case %d: merged differs by side:\n%q\n%q", n, m.Merged, sym.Merged)
		}
		for _, added := range [][]byte{ours, theirs} {
			for _, l := range bytes.SplitAfter(added, []byte("\n")) {
				if (bytes.HasPrefix(l, []byte("o")) || bytes.HasPrefix(l, []byte("t"))) && !bytes.Contains(m.Merged, l) {
					t.Fatalf("case %d: added line %q lost from %q", n, l, m.Merged)
				}
			}
		}
	}
	if clean == 0 {
		t.Fatal("no random case merged cleanly; the test checks nothing")
	}
}

var seq int

func randLines(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for range n {
		seq++
		b.WriteString("base" + string(rune('a'+r.IntN(26))) + string(rune('a'+seq%26)) + string(rune('a'+seq/26%26)) + "\n")
	}
	return b.Bytes()
}

// edit changes, deletes or inserts a few lines, each new line unique and
// starting with tag.
func edit(r *rand.Rand, base []byte, tag string) []byte {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(base, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		switch r.IntN(12) {
		case 0:
		case 1:
			seq++
			b.WriteString(tag + string(rune('a'+seq%26)) + string(rune('a'+seq/26%26)) + string(rune('a'+seq/676%26)) + "\n")
		case 2:
			seq++
			b.WriteString(tag + string(rune('a'+seq%26)) + string(rune('a'+seq/26%26)) + string(rune('a'+seq/676%26)) + "\n")
			b.Write(l)
		default:
			b.Write(l)
		}
	}
	return b.Bytes()
}
