package edit_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/orion-agent/orion/internal/edit"
)

// region replaces lines [start, end) of a file with repl.
type region struct {
	start, end int
	repl       []string
}

// randomCase is a random file and a random edit of it, both as lines.
type randomCase struct {
	lines    []string
	regions  []region
	crlf     bool
	finalEOL bool
}

func genCase(r *rand.Rand) randomCase {
	words := []string{"alpha", "beta", "gamma", "delta", "if x {", "}", "return nil", "x := y"}
	indents := []string{"", "\t", "\t\t", "    "}
	c := randomCase{crlf: r.IntN(3) == 0, finalEOL: r.IntN(4) != 0}
	n := r.IntN(30)
	for i := range n {
		// Unique lines, so that every format finds each change once.
		c.lines = append(c.lines, fmt.Sprintf("%s%s %d", indents[r.IntN(len(indents))], words[r.IntN(len(words))], i))
	}
	if n == 0 {
		c.finalEOL = true // an empty file has no last line to lack a newline
	}
	if n == 0 || n == 1 && !c.finalEOL {
		c.crlf = false // no line ending to learn the file's from
	}
	// Regions are two lines apart at least, so that the context line a
	// search/replace block takes on either side never overlaps another's.
	for pos, k := 0, 0; pos <= n; k++ {
		start := pos + r.IntN(6)
		if start > n {
			break
		}
		end := min(start+r.IntN(4), n)
		var repl []string
		for j := range r.IntN(4) {
			repl = append(repl, fmt.Sprintf("%snew %d.%d", indents[r.IntN(len(indents))], k, j))
		}
		if start == end && len(repl) == 0 {
			pos = start + 1
			continue
		}
		c.regions = append(c.regions, region{start, end, repl})
		pos = end + 2
	}
	return c
}

func (c randomCase) render(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	eol := "\n"
	if c.crlf {
		eol = "\r\n"
	}
	s := strings.Join(lines, eol)
	if c.finalEOL {
		s += eol
	}
	return s
}

// want is the file after the edit.
func (c randomCase) want() []string {
	var out []string
	cur := 0
	for _, g := range c.regions {
		out = append(append(out, c.lines[cur:g.start]...), g.repl...)
		cur = g.end
	}
	return append(out, c.lines[cur:]...)
}

// searchReplace expresses the edit as search/replace blocks, with a line
// of context where a block would otherwise have nothing to find or leave
// nothing to recognise it by once applied.
func (c randomCase) searchReplace(r *rand.Rand) string {
	var b strings.Builder
	for _, g := range c.regions {
		s, e := g.start, g.end
		needCtx := s == e || len(g.repl) == 0
		if s > 0 && (needCtx || r.IntN(2) == 0) {
			s--
		}
		if e < len(c.lines) && (needCtx && s == g.start || r.IntN(2) == 0) {
			e++
		}
		repl := append(append(append([]string(nil), c.lines[s:g.start]...), g.repl...), c.lines[g.end:e]...)
		b.WriteString("<<<<<<< SEARCH\n")
		for _, l := range c.lines[s:e] {
			b.WriteString(l + "\n")
		}
		b.WriteString("=======\n")
		for _, l := range repl {
			b.WriteString(l + "\n")
		}
		b.WriteString(">>>>>>> REPLACE\n")
	}
	return b.String()
}

// lf renders lines with LF, the way a model sees and writes them.
func (c randomCase) lf(lines []string) string {
	cc := c
	cc.crlf = false
	return cc.render(lines)
}

// unified expresses the edit as a unified diff written by go-udiff.
func (c randomCase) unified() string {
	return udiff.Unified("a/f", "b/f", c.lf(c.lines), c.lf(c.want()))
}

// envelope expresses the edit as a Begin Patch envelope, one chunk per
// go-udiff hunk.
func (c randomCase) envelope(t *testing.T) string {
	old := c.lf(c.lines)
	d, err := udiff.ToUnifiedDiff("f", "f", old, udiff.Lines(old, c.lf(c.want())), 3)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Update File: f\n")
	for _, h := range d.Hunks {
		b.WriteString("@@\n")
		for _, l := range h.Lines {
			prefix := map[udiff.OpKind]string{udiff.Equal: " ", udiff.Delete: "-", udiff.Insert: "+"}[l.Kind]
			b.WriteString(prefix + strings.TrimSuffix(l.Content, "\n") + "\n")
		}
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// TestRoundTrip applies random edits expressed in each format and checks
// that all give the file the edit describes, with the file's line endings,
// and that each is already applied when sent again.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		c := genCase(r)
		if len(c.regions) == 0 {
			continue
		}
		old, want := c.render(c.lines), c.render(c.want())
		formats := []struct {
			name  string
			edit  string
			apply func(old []byte, edit string) (edit.Result, error)
		}{
			{"SearchReplace", c.searchReplace(r), func(old []byte, e string) (edit.Result, error) {
				return edit.ApplySearchReplace(old, []byte(e))
			}},
			{"UnifiedDiff", c.unified(), func(old []byte, e string) (edit.Result, error) {
				return edit.ApplyUnifiedDiff(old, []byte(e))
			}},
			{"Envelope", c.envelope(t), func(old []byte, e string) (edit.Result, error) {
				res, err := edit.ApplyEnvelope([]byte(e), func(string) ([]byte, bool, error) { return old, true, nil })
				if err == nil {
					res.Content = old
					if len(res.Files) == 1 {
						res.Content = res.Files[0].Content
					}
				}
				return res, err
			}},
		}
		for _, f := range formats {
			res, err := f.apply([]byte(old), f.edit)
			if err != nil {
				t.Fatalf("case %d, %s: %v\nold:\n%q\nedit:\n%s", i, f.name, err, old, f.edit)
			}
			if got := string(res.Content); got != want {
				t.Fatalf("case %d, %s:\nold  %q\ngot  %q\nwant %q\nedit:\n%s", i, f.name, old, got, want, f.edit)
			}
			// Sent again, the edit is a no-op, unless it emptied the file:
			// nothing is left then to recognise it by.
			if len(c.want()) == 0 {
				continue
			}
			again, err := f.apply(res.Content, f.edit)
			if err != nil {
				t.Fatalf("case %d, %s, resent: %v\nfile:\n%q\nedit:\n%s", i, f.name, err, res.Content, f.edit)
			}
			if again.Changed || string(again.Content) != want {
				t.Fatalf("case %d, %s, resent: changed the file to %q", i, f.name, again.Content)
			}
			for _, b := range again.Blocks {
				if b.Status != edit.StatusAlreadyApplied {
					t.Fatalf("case %d, %s, resent: block %d is %s, want already_applied\nedit:\n%s", i, f.name, b.Index, b.Status, f.edit)
				}
			}
		}
	}
}
