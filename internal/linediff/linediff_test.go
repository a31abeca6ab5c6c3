package linediff_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/linediff"
)

// apply rebuilds b from a and the edits, checking they are ordered and
// separated by at least one unchanged line.
func apply(t *testing.T, a, b [][]byte, edits []linediff.Edit) []byte {
	t.Helper()
	var out [][]byte
	at, bt := 0, 0
	for k, e := range edits {
		if e.A0 < at || (k > 0 && e.A0 == at) || e.A1 < e.A0 || e.B1 < e.B0 {
			t.Fatalf("edit %d %+v out of order or touching the previous (at %d)", k, e, at)
		}
		if e.A0-at != e.B0-bt {
			t.Fatalf("edit %d %+v: unchanged run lengths differ", k, e)
		}
		for x := at; x < e.A0; x++ {
			if !bytes.Equal(a[x], b[bt+x-at]) {
				t.Fatalf("line %d kept as unchanged but differs", x)
			}
		}
		out = append(out, a[at:e.A0]...)
		out = append(out, b[e.B0:e.B1]...)
		at, bt = e.A1, e.B1
	}
	out = append(out, a[at:]...)
	return bytes.Join(out, nil)
}

// lcs is the textbook dynamic program: the length of a longest common
// subsequence, so a minimal diff changes len(a)+len(b)-2*lcs lines.
func lcs(a, b [][]byte) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case bytes.Equal(a[i], b[j]):
				cur[j+1] = prev[j] + 1
			case prev[j+1] > cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func randText(r *rand.Rand, n int, alphabet string) []byte {
	var sb strings.Builder
	for range n {
		sb.WriteByte(alphabet[r.IntN(len(alphabet))])
		if r.IntN(20) == 0 {
			sb.WriteString("\r")
		}
		sb.WriteByte('\n')
	}
	s := sb.String()
	if r.IntN(3) == 0 && len(s) > 0 {
		s = s[:len(s)-1] // no final newline
	}
	return []byte(s)
}

func TestDiffIsCorrectAndMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 3000 {
		a := randText(r, r.IntN(40), "abcde"[:1+r.IntN(5)])
		b := randText(r, r.IntN(40), "abcde"[:1+r.IntN(5)])
		if n%2 == 0 {
			// Similar texts, as real edits are.
			b = mutate(r, a)
		}
		al, bl := linediff.Split(a), linediff.Split(b)
		edits := linediff.Diff(al, bl)
		if got := apply(t, al, bl, edits); !bytes.Equal(got, b) {
			t.Fatalf("case %d: edits rebuild %q, want %q", n, got, b)
		}
		changed := 0
		for _, e := range edits {
			changed += e.A1 - e.A0 + e.B1 - e.B0
		}
		if want := len(al) + len(bl) - 2*lcs(al, bl); changed != want {
			t.Fatalf("case %d: %d lines changed, a minimal diff changes %d\na=%q\nb=%q", n, changed, want, a, b)
		}
	}
}

func mutate(r *rand.Rand, a []byte) []byte {
	lines := linediff.Split(a)
	var out [][]byte
	for _, l := range lines {
		switch r.IntN(8) {
		case 0: // drop
		case 1:
			out = append(out, []byte("x\n"), l)
		case 2:
			out = append(out, []byte("y\n"))
		default:
			out = append(out, l)
		}
	}
	return bytes.Join(out, nil)
}

func TestSplitKeepsEveryByte(t *testing.T) {
	for _, s := range []string{"", "a", "a\n", "a\r\nb", "\n\n", "a\rb\n"} {
		if got := string(bytes.Join(linediff.Split([]byte(s)), nil)); got != s {
			t.Errorf("Split(%q) joins to %q", s, got)
		}
	}
}

// TestEveryThirdLine is the case that motivated the package: a diff
// library capped at depth 50 showed ~2x the changed lines.
func TestEveryThirdLine(t *testing.T) {
	var a, b strings.Builder
	for i := range 360 {
		line := "line " + strings.Repeat("x", i%7) + string(rune('0'+i%10)) + "\n"
		a.WriteString(line)
		if i%3 == 0 {
			b.WriteString("changed " + line)
		} else {
			b.WriteString(line)
		}
	}
	del, ins := linediff.Count([]byte(a.String()), []byte(b.String()))
	if del != 120 || ins != 120 {
		t.Fatalf("deleted %d, inserted %d; want 120 and 120", del, ins)
	}
}

// TestLargeUnlikeInputsFinish: wholly different large inputs pass the cost
// bound; the diff is still correct.
func TestLargeUnlikeInputsFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a, b strings.Builder
	for range 8000 {
		a.WriteString(string(rune('a'+r.IntN(26))) + "\n")
		b.WriteString(string(rune('a'+r.IntN(26))) + "\n")
	}
	al, bl := linediff.Split([]byte(a.String())), linediff.Split([]byte(b.String()))
	if got := apply(t, al, bl, linediff.Diff(al, bl)); string(got) != b.String() {
		t.Fatal("edits do not rebuild b")
	}
}

func TestUnified(t *testing.T) {
	got := linediff.Unified("a/f", "b/f", []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), []byte("1\n2\nthree\n4\n5\n6\n7\n8\n9"), 1)
	want := "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n 2\n-3\n+three\n 4\n@@ -8,2 +8,2 @@\n 8\n-9\n+9\n\\ No newline at end of file\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := linediff.Unified("a", "b", nil, []byte("x\n"), 3); got != "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("insertion into an empty file: %q", got)
	}
}

// TestHostileInputFinishes: many lines from a tiny alphabet, the
// worst case for the search, end within the work budget with a correct
// diff.
func TestHostileInputFinishes(t *testing.T) {
	if testing.Short() {
		t.Skip("a large input")
	}
	r := rand.New(rand.NewPCG(9, 10))
	var a, b strings.Builder
	for range 1 << 16 {
		a.WriteString(string(rune('a'+r.IntN(4))) + "\n")
		b.WriteString(string(rune('a'+r.IntN(4))) + "\n")
	}
	al, bl := linediff.Split([]byte(a.String())), linediff.Split([]byte(b.String()))
	if got := apply(t, al, bl, linediff.Diff(al, bl)); string(got) != b.String() {
		t.Fatal("edits do not rebuild b")
	}
}
