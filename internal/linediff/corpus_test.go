package linediff_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/linediff"
	"github.com/orion-agent/orion/internal/linediff/filepairs"
)

// gnuDiff counts the lines `diff` deletes and inserts, with extra flags.
func gnuDiff(t *testing.T, dir string, old, new []byte, flags ...string) (int, int) {
	t.Helper()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, new, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("diff", append(append([]string{"-u"}, flags...), a, b)...).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("diff: %v", err)
	}
	// The "---" and "+++" headers are the first two lines of a two-file
	// diff; after them every line starting with - or + is content.
	lines := strings.Split(string(out), "\n")
	if len(lines) > 2 {
		lines = lines[2:]
	}
	del, ins := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "-"):
			del++
		case strings.HasPrefix(l, "+"):
			ins++
		}
	}
	return del, ins
}

func needDiff(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("diff is not installed: the comparison with diff -u needs it")
	}
}

// everyThird changes every third line of b, the review case that showed
// twice the lines of a minimal diff with the earlier library.
func everyThird(b []byte) []byte {
	lines := linediff.Split(b)
	for i := 0; i < len(lines); i += 3 {
		lines[i] = append([]byte("// changed\t"), lines[i]...)
	}
	return bytes.Join(lines, nil)
}

// scramble makes random line edits: deletions, insertions, changes and a
// moved block.
func scramble(r *rand.Rand, b []byte) []byte {
	lines := linediff.Split(b)
	var out [][]byte
	for _, l := range lines {
		switch r.IntN(10) {
		case 0:
		case 1:
			out = append(out, []byte(fmt.Sprintf("inserted %d\n", r.IntN(1000))), l)
		case 2:
			out = append(out, []byte(fmt.Sprintf("changed %d\n", r.IntN(1000))))
		default:
			out = append(out, l)
		}
	}
	if n := len(out); n > 20 {
		i, j := r.IntN(n/2), n/2+r.IntN(n/2)
		blk := append([][]byte{}, out[i:i+5]...)
		out = append(out[:i], out[i+5:]...)
		out = append(out[:j-5], append(blk, out[j-5:]...)...)
	}
	return bytes.Join(out, nil)
}

// TestCorpusAgainstGNUDiff compares the changed lines with GNU diff on the
// real pairs and on scripted edits of them: equal to `diff --minimal`
// (both are minimal), within 5% of plain `diff -u`, which is what a
// person compares a review with.
func TestCorpusAgainstGNUDiff(t *testing.T) {
	needDiff(t)
	ps := filepairs.Load(t)
	if len(ps) < 50 {
		t.Fatalf("corpus has %d pairs, want at least 50", len(ps))
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 8))
	var mine, gnu, cases int
	check := func(name string, old, new []byte) {
		d, i := linediff.Count(old, new)
		md, mi := gnuDiff(t, dir, old, new, "--minimal")
		gd, gi := gnuDiff(t, dir, old, new)
		if d+i != md+mi {
			t.Errorf("%s: %d lines changed, diff --minimal changes %d", name, d+i, md+mi)
		}
		if float64(d+i) > 1.05*float64(gd+gi) {
			t.Errorf("%s: %d lines changed, more than 5%% over diff -u's %d", name, d+i, gd+gi)
		}
		mine += d + i
		gnu += gd + gi
		cases++
	}
	for _, p := range ps {
		check(p.Name, p.Old, p.New)
		check(p.Name+" every third line", p.Old, everyThird(p.Old))
		check(p.Name+" scrambled", p.Old, scramble(r, p.Old))
	}
	t.Logf("%d pairs (%d real): %d lines changed here, %d by diff -u", cases, len(ps), mine, gnu)
}
