package session_test

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

	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/internal/linediff"
	"github.com/orion-agent/orion/internal/linediff/filepairs"
	"github.com/orion-agent/orion/internal/merge"
	"github.com/orion-agent/orion/protocol"
)

// personEdit changes one to four places of b at random, as a person
// editing meanwhile would: a line changed, lines deleted, a line inserted.
func personEdit(r *rand.Rand, b []byte) []byte {
	lines := linediff.Split(b)
	for n := 1 + r.IntN(4); n > 0 && len(lines) > 4; n-- {
		i := r.IntN(len(lines) - 1)
		switch r.IntN(3) {
		case 0:
			lines[i] = []byte(fmt.Sprintf("%s // person %d\n", bytes.TrimRight(lines[i], "\n"), n))
		case 1:
			j := min(i+1+r.IntN(3), len(lines)-1)
			lines = append(lines[:i:i], lines[j:]...)
		default:
			lines = append(lines[:i:i], append([][]byte{[]byte(fmt.Sprintf("// person inserted %d\n", n))}, lines[i:]...)...)
		}
	}
	return bytes.Join(lines, nil)
}

// agentEdit picks one to three lines of base whose search text (the lines
// and ctx lines of context each side) is found once, and changes them. It
// returns the edit as search/replace blocks (ctx 1) or a unified diff (ctx
// 3), and base with the change made.
func agentEdit(r *rand.Rand, base []byte, diff bool) (string, []byte, bool) {
	lines := linediff.Split(base)
	ctx := 1
	if diff {
		ctx = 3
	}
	for try := 0; try < 20; try++ {
		n := 1 + r.IntN(3)
		if len(lines) < n+2*ctx+2 {
			return "", nil, false
		}
		i := ctx + r.IntN(len(lines)-n-2*ctx-1)
		j := i + n
		changed := make([][]byte, 0, n)
		for _, l := range lines[i:j] {
			changed = append(changed, []byte(strings.TrimRight(string(l), "\n")+" // agent\n"))
		}
		before, after := lines[i-ctx:i], lines[j:j+ctx]
		search := bytes.Join(append(append(append([][]byte{}, before...), lines[i:j]...), after...), nil)
		if bytes.Count(base, search) != 1 {
			continue
		}
		result := bytes.Join(append(append(append([][]byte{}, lines[:i]...), changed...), lines[j:]...), nil)
		var b strings.Builder
		if diff {
			fmt.Fprintf(&b, "--- a/f.go\n+++ b/f.go\n@@ -%d,%d +%d,%d @@\n", i-ctx+1, n+2*ctx, i-ctx+1, n+2*ctx)
			for _, l := range before {
				b.WriteString(" " + string(l))
			}
			for _, l := range lines[i:j] {
				b.WriteString("-" + string(l))
			}
			for _, l := range changed {
				b.WriteString("+" + string(l))
			}
			for _, l := range after {
				b.WriteString(" " + string(l))
			}
		} else {
			replace := bytes.Join(append(append(append([][]byte{}, before...), changed...), after...), nil)
			fmt.Fprintf(&b, "<<<<<<< SEARCH\n%s=======\n%s>>>>>>> REPLACE\n", search, replace)
		}
		return b.String(), result, true
	}
	return "", nil, false
}

// TestEditsMergedOnRealFiles: an agent's edit of a real file (search/replace
// blocks, or a unified diff) is streamed while the file changes under it
// (the file's real next version, or a person's scripted edits), then
// finalized. Where the edit no longer applies to the file, what the
// finalize writes is the three-way merge of (the file at begin, the file
// now, the edit applied to the file at begin), byte for byte, and it is
// refused exactly where that merge conflicts; nothing is written on a
// refusal.
func TestEditsMergedOnRealFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("the corpus of real files is skipped in -short mode")
	}
	ps := filepairs.Load(t)
	h := newHarness(t)
	off := &protocol.ValidationPolicy{All: "off"}
	gitDir := ""
	if _, err := exec.LookPath("git"); err == nil {
		gitDir = t.TempDir()
	} else {
		t.Log("git is not installed: merges are compared with internal/merge only, not with git merge-file")
	}
	gitAgrees := 0
	var cases, appliedNow, mergedFromBegin, refused, skipped, nowAgrees, nowTouching int
	for k, p := range ps {
		r := rand.New(rand.NewPCG(uint64(k), 33))
		for _, diff := range []bool{false, true} {
			for _, real := range []bool{true, false} {
				text, agentOnBase, ok := agentEdit(r, p.Old, diff)
				if !ok {
					skipped++
					continue
				}
				person := p.New
				if !real {
					person = personEdit(r, p.Old)
				}
				if bytes.Equal(person, p.Old) {
					skipped++
					continue
				}
				cases++
				name := fmt.Sprintf("%s diff=%v real=%v", p.Name, diff, real)
				file := fmt.Sprintf("c%d.go", cases)
				path := filepath.Join(h.root, file)
				if err := os.WriteFile(path, p.Old, 0o644); err != nil {
					t.Fatal(err)
				}
				b := h.begin(protocol.BeginParams{TargetFile: file, Operation: protocol.OpEdit, Validation: off})
				h.append(b.SessionID, text+b.EndMarker+"\n")
				if err := os.WriteFile(path, person, 0o644); err != nil {
					t.Fatal(err)
				}
				_, nowErr := edit.Apply(person, []byte(text))
				want := merge.Merge3(p.Old, person, agentOnBase)
				_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
				got, _ := os.ReadFile(path)
				var pe *protocol.Error
				switch {
				case err == nil && nowErr == nil:
					appliedNow++
					switch {
					case want.Clean && bytes.Equal(got, want.Merged):
						nowAgrees++
					case want.Clean:
						t.Errorf("%s: applied to the file as it is, differently from the clean three-way merge", name)
					default:
						// The edit's lines touch the person's change
						// (git would call it a conflict), but its text
						// still matched once in the file as it is.
						nowTouching++
					}
				case err == nil:
					mergedFromBegin++
					if !want.Clean || !bytes.Equal(got, want.Merged) {
						t.Errorf("%s: merged from begin, but not as the three-way merge (clean %v)", name, want.Clean)
					}
					if gitDir != "" {
						if out, clean := filepairs.GitMergeFile(t, gitDir, p.Old, person, agentOnBase); !clean || !bytes.Equal(out, got) {
							t.Errorf("%s: merged from begin, but git merge-file merges it otherwise (clean %v)", name, clean)
						}
						gitAgrees++
					}
				case errors.As(err, &pe) && pe.Data.Reason == protocol.ReasonTargetChanged:
					refused++
					if gitDir != "" {
						if _, clean := filepairs.GitMergeFile(t, gitDir, p.Old, person, agentOnBase); clean {
							t.Errorf("%s: refused where git merge-file merges cleanly", name)
						}
						gitAgrees++
					}
					if want.Clean || len(pe.Data.Conflicts) == 0 {
						t.Errorf("%s: refused, with %d conflicts, where the three-way merge is clean %v", name, len(pe.Data.Conflicts), want.Clean)
					}
					if !bytes.Equal(got, person) {
						t.Errorf("%s: a refused finalize changed the file", name)
					}
				default:
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	}
	if cases < 100 {
		t.Fatalf("%d cases, want at least 100", cases)
	}
	t.Logf("%d edits of %d real files finalized after the file changed (%d skipped): applied to the file as it is %d "+
		"(%d equal to the three-way merge, %d touching the other change where the merge conflicts), "+
		"no longer applying and merged from the content at begin %d, refused with the regions %d",
		cases, len(ps), skipped, appliedNow, nowAgrees, nowTouching, mergedFromBegin, refused)
	t.Logf("git merge-file agrees on %d of the %d merged or refused from the content at begin", gitAgrees, mergedFromBegin+refused)
}
