package elide_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/internal/elide"
	"github.com/orion-agent/orion/internal/validate"
)

// corpusCase is one graded case: the file, the text a model wrote with
// parts left out, and the file it must become, or a refusal.
type corpusCase struct {
	name, target     string
	orig, text, want string
	mustRefuse       bool
	// looseNewlines compares with line breaks removed, where the source
	// grades its own case that way (its expected text differs from a
	// right merge only in blank lines).
	looseNewlines bool
}

// outcome is how a case was graded.
type outcome string

const (
	outMerged    outcome = "merged"     // merged, equal to the expected file
	outRefused   outcome = "refused"    // refused as ambiguous
	outWrong     outcome = "wrong"      // merged, and not the expected file
	outNoElision outcome = "no elision" // no placeholder to merge: not graded
)

// grade merges c's text into its file as the daemon does and says how
// that compares with what the source expects.
func grade(t *testing.T, c corpusCase) outcome {
	t.Helper()
	el := validate.NewPlaceholderLines(c.target, []byte(c.text), []byte(c.orig))
	if len(el) == 0 {
		return outNoElision
	}
	got, n, err := elide.Merge([]byte(c.orig), []byte(c.text), el)
	if err != nil {
		var ae *elide.AmbiguousError
		var de *elide.DroppedError
		if !errors.As(err, &ae) && !errors.As(err, &de) {
			t.Errorf("err = %v, want an AmbiguousError or a DroppedError", err)
		}
		t.Logf("refused: %v", err)
		return outRefused
	}
	if n != len(el) {
		t.Errorf("n = %d, want %d", n, len(el))
	}
	want, have := c.want, string(got)
	if c.looseNewlines {
		want, have = strings.ReplaceAll(want, "\n", ""), strings.ReplaceAll(have, "\n", "")
	}
	if c.mustRefuse || have != want {
		t.Errorf("wrong apply:\n%s\nwant:\n%s", got, c.want)
		return outWrong
	}
	return outMerged
}

// readCaseDirs reads the cases of a source kept one per directory:
// before, elided, after (absent when the merge must refuse) and case
// ("name:", "target:", "compare: ignore-newlines", and "before:" naming
// a file other cases share).
func readCaseDirs(t *testing.T, source string) []corpusCase {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", source, "*", "case"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases in %s: %v", source, err)
	}
	var out []corpusCase
	for _, meta := range dirs {
		dir := filepath.Dir(meta)
		read := func(name string) (string, bool) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, os.ErrNotExist) {
				return "", false
			}
			if err != nil {
				t.Fatal(err)
			}
			return string(b), true
		}
		c := corpusCase{name: filepath.Base(dir)}
		m, _ := read("case")
		before := "before"
		for _, l := range strings.Split(m, "\n") {
			k, v, _ := strings.Cut(l, ":")
			switch v = strings.TrimSpace(v); k {
			case "before":
				before = filepath.FromSlash(v) // a file several cases share
			case "target":
				c.target = v
			case "compare":
				c.looseNewlines = v == "ignore-newlines"
			}
		}
		var ok bool
		if c.orig, ok = read(before); !ok {
			t.Fatalf("%s: no %s", dir, before)
		}
		if c.text, ok = read("elided"); !ok {
			t.Fatalf("%s: no elided", dir)
		}
		c.want, ok = read("after")
		c.mustRefuse = !ok
		out = append(out, c)
	}
	return out
}

// continueCases reads Continue's examples (testdata/continue), in their
// own format; those whose expected file cannot be rebuilt are left out.
func continueCases(t *testing.T) (cases []corpusCase, unparsed int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "continue", "*.diff"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := parseContinue(filepath.Base(f), b)
		if !c.parsed {
			unparsed++
			continue
		}
		cases = append(cases, corpusCase{name: c.name, target: c.target, orig: c.orig, text: c.text, want: c.want})
	}
	return cases, unparsed
}

// TestPublicCorpus grades the merge on every public source's cases: each
// merges byte for byte as its source expects, or is refused; a merge that
// differs is a wrong apply, and there must be none.
func TestPublicCorpus(t *testing.T) {
	cont, unparsed := continueCases(t)
	sources := []struct {
		name  string
		cases []corpusCase
	}{
		{"continue", cont},
		{"plandex", readCaseDirs(t, "plandex")},
		{"codebuff", readCaseDirs(t, "codebuff")},
		{"aider", readCaseDirs(t, "aider")},
	}
	total := map[outcome]int{}
	required := 0 // refusals where the source expects one
	for _, s := range sources {
		count := map[outcome]int{}
		must := 0
		for _, c := range s.cases {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				o := grade(t, c)
				t.Logf("outcome: %s", o)
				count[o]++
				total[o]++
				if o == outRefused && c.mustRefuse {
					must++
				}
			})
		}
		required += must
		t.Logf("%s: %d cases: %d merged as expected, %d refused (%d where a refusal is required), %d wrong; %d without an elision",
			s.name, len(s.cases), count[outMerged], count[outRefused], must, count[outWrong], count[outNoElision])
	}
	graded := total[outMerged] + total[outRefused] + total[outWrong]
	t.Logf("all: %d graded: %d merged as expected, %d refused (%d where a refusal is required), %d wrong; %d without an elision, %d of Continue's not gradable",
		graded, total[outMerged], total[outRefused], required, total[outWrong], total[outNoElision], unparsed)
	if total[outWrong] != 0 {
		t.Errorf("%d wrong applies, want 0", total[outWrong])
	}
	if graded < 50 {
		t.Errorf("only %d graded cases, want at least 50", graded)
	}
}

// TestPublicCorpusAsBlocks sends every graded case again as one
// search/replace block whose SEARCH part is the whole file and whose
// REPLACE part is the model's text: a placeholder in REPLACE is merged by
// the same rules, so each case must come out as the whole-file merge does
// (merged byte for byte, or refused: its placeholder left for validation
// to refuse, or the block failed), and never wrong.
func TestPublicCorpusAsBlocks(t *testing.T) {
	cont, _ := continueCases(t)
	var all []corpusCase
	for _, src := range [][]corpusCase{cont, readCaseDirs(t, "plandex"), readCaseDirs(t, "codebuff"), readCaseDirs(t, "aider")} {
		all = append(all, src...)
	}
	count := map[outcome]int{}
	for _, c := range all {
		if len(validate.NewPlaceholderLines(c.target, []byte(c.text), []byte(c.orig))) == 0 {
			continue
		}
		if strings.Contains(c.orig+c.text, "=======") || strings.Contains(c.orig+c.text, "<<<<<<<") || strings.Contains(c.orig+c.text, ">>>>>>>") {
			continue // the text holds a block's own markers
		}
		t.Run(c.name, func(t *testing.T) {
			orig := strings.TrimSuffix(c.orig, "\n") + "\n"
			block := "<<<<<<< SEARCH\n" + orig + "=======\n" + strings.TrimSuffix(c.text, "\n") + "\n>>>>>>> REPLACE\n"
			res, err := edit.ApplyFile(c.target, []byte(c.orig), []byte(block))
			var o outcome
			switch {
			case err != nil:
				// A failed block (Aider's "..." unpaired in a Python
				// text) is refused too, and writes nothing.
				t.Logf("the block failed: %v", err)
				o = outRefused
			case res.ElisionsMerged == 0:
				if len(validate.NewPlaceholderLines(c.target, res.Content, []byte(c.orig))) == 0 {
					t.Fatalf("not merged, and no placeholder left for validation to refuse:\n%s", res.Content)
				}
				o = outRefused
			default:
				want, have := c.want, string(res.Content)
				if c.looseNewlines {
					want, have = strings.ReplaceAll(want, "\n", ""), strings.ReplaceAll(have, "\n", "")
				}
				o = outMerged
				if c.mustRefuse || have != want {
					o = outWrong
					t.Errorf("wrong apply:\n%s\nwant:\n%s", res.Content, c.want)
				}
			}
			if whole := grade(t, c); whole != o {
				t.Errorf("as a block: %s; as a whole file: %s", o, whole)
			}
			count[o]++
		})
	}
	t.Logf("%d cases as blocks: %d merged as expected, %d refused, %d wrong", count[outMerged]+count[outRefused]+count[outWrong], count[outMerged], count[outRefused], count[outWrong])
	if count[outWrong] != 0 {
		t.Errorf("%d wrong applies, want 0", count[outWrong])
	}
}
