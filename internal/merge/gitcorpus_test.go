package merge_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/linediff"
	"github.com/orion-agent/orion/internal/linediff/filepairs"
	"github.com/orion-agent/orion/internal/merge"
)

// scriptEdit makes one to four independent edits at random places, as a
// person or another agent would: a line changed, lines deleted, lines
// inserted.
func scriptEdit(r *rand.Rand, b []byte, tag string) []byte {
	lines := linediff.Split(b)
	if len(lines) == 0 {
		return []byte(tag + "\n")
	}
	for n := 1 + r.IntN(4); n > 0; n-- {
		i := r.IntN(len(lines))
		switch r.IntN(3) {
		case 0:
			l := bytes.TrimRight(lines[i], "\n")
			lines[i] = []byte(fmt.Sprintf("%s // %s %d\n", l, tag, n))
		case 1:
			j := min(i+1+r.IntN(3), len(lines))
			if j-i < len(lines) {
				lines = append(lines[:i:i], lines[j:]...)
			}
		default:
			ins := [][]byte{[]byte(fmt.Sprintf("// %s inserted %d\n", tag, n))}
			lines = append(lines[:i:i], append(ins, lines[i:]...)...)
		}
	}
	return bytes.Join(lines, nil)
}

// TestAgainstGitMergeFile runs three-way merges of real files with
// scripted edits through Merge3 and `git merge-file`: never clean where
// git finds a conflict, and where both are clean, the same bytes (so no
// byte of either side is lost where git keeps it).
func TestAgainstGitMergeFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the comparison with git merge-file needs it")
	}
	ps := filepairs.Load(t)
	dir := t.TempDir()
	var stricter []string
	var cases, mineClean, gitClean, cleanerHere, sameClean int
	check := func(name string, base, ours, theirs []byte) {
		cases++
		m := merge.Merge3(base, ours, theirs)
		gout, gclean := filepairs.GitMergeFile(t, dir, base, ours, theirs)
		if m.Clean {
			mineClean++
		}
		if gclean {
			gitClean++
		}
		switch {
		case m.Clean && !gclean:
			cleanerHere++
			t.Errorf("%s: merged cleanly where git merge-file finds a conflict", name)
		case m.Clean && gclean:
			if !bytes.Equal(m.Merged, gout) {
				t.Errorf("%s: clean merge differs from git's", name)
			} else {
				sameClean++
			}
		}
		if !m.Clean && gclean {
			stricter = append(stricter, name)
		}
		if !m.Clean {
			for _, c := range m.Conflicts {
				if bytes.Equal(c.Ours, c.Theirs) {
					t.Errorf("%s: a conflict whose sides are equal", name)
				}
			}
		}
	}
	for k, p := range ps {
		r := rand.New(rand.NewPCG(uint64(k), 31))
		// The real change against a scripted one, twice, and two
		// scripted changes of the same version.
		check(p.Name+" real/script", p.Old, p.New, scriptEdit(r, p.Old, "theirs"))
		check(p.Name+" script/real", p.Old, scriptEdit(r, p.Old, "ours"), p.New)
		check(p.Name+" script/script", p.New, scriptEdit(r, p.New, "ours"), scriptEdit(r, p.New, "theirs"))
	}
	if cases < 100 {
		t.Fatalf("%d cases, want at least 100", cases)
	}
	t.Logf("%d three-way cases from %d real file pairs: clean here %d (%.1f%%), clean in git merge-file %d (%.1f%%); "+
		"both clean and byte-identical %d; clean here where git conflicts %d",
		cases, len(ps), mineClean, pct(mineClean, cases), gitClean, pct(gitClean, cases), sameClean, cleanerHere)
	t.Logf("refused here, merged by git: %s", strings.Join(stricter, ", "))
}

func pct(n, d int) float64 { return 100 * float64(n) / float64(d) }
