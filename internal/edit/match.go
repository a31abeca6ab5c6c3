package edit

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// levels are the match levels in the order they are tried.
var levels = []Match{MatchExact, MatchTrailingSpace, MatchIndentation, MatchPunctuation}

// norm is how a level compares lines.
func norm(m Match, s string) string {
	switch m {
	case MatchTrailingSpace:
		return strings.TrimRightFunc(s, unicode.IsSpace)
	case MatchIndentation:
		return strings.TrimSpace(s)
	case MatchPunctuation:
		return asciiPunct.Replace(strings.TrimSpace(s))
	}
	return s
}

// asciiPunct reads typographic punctuation as ASCII, as Codex's matcher
// does: models write ASCII quotes and dashes where a file has the
// typographic ones.
var asciiPunct = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)

// findAll returns every i in [lo, hi] where lines[i:i+len(needle)] equals
// needle at level m. An empty needle matches nowhere: callers place pure
// insertions themselves.
func findAll(lines, needle []string, m Match, lo, hi int) []int {
	if len(needle) == 0 {
		return nil
	}
	lo = max(lo, 0)
	hi = min(hi, len(lines)-len(needle))
	want := make([]string, len(needle))
	for i, n := range needle {
		want[i] = norm(m, n)
	}
	var at []int
outer:
	for i := lo; i <= hi; i++ {
		for k, w := range want {
			if norm(m, lines[i+k]) != w {
				continue outer
			}
		}
		at = append(at, i)
	}
	return at
}

// findUnique tries the levels in order and returns the matches of the first
// level that has any.
func findUnique(lines, needle []string, lo, hi int, maxLevel Match) ([]int, Match) {
	for _, m := range levels {
		if at := findAll(lines, needle, m, lo, hi); len(at) > 0 {
			return at, m
		}
		if m == maxLevel {
			break
		}
	}
	return nil, ""
}

// oneBased turns 0-based indexes into line numbers.
func oneBased(at []int) []int {
	out := make([]int, len(at))
	for i, a := range at {
		out[i] = a + 1
	}
	return out
}

func lineList(at []int) string {
	var b strings.Builder
	for i, a := range at {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 8 {
			fmt.Fprintf(&b, "and %d more", len(at)-i)
			break
		}
		fmt.Fprint(&b, a)
	}
	return b.String()
}

// closestCandidates is how many windows closest scores in full.
const closestCandidates = 16

// closest finds the run of len(needle) lines of the file most like needle,
// so that an error can show a model what the file really says there. Full
// scoring (character bigrams of every line pair) costs too much for every
// window of a big file, so it scores only candidates: the windows with the
// most lines equal to the needle's (ignoring surrounding space), and those
// where the needle's most distinctive line fits best.
func closest(lines, needle []string) *Excerpt {
	n := len(needle)
	if n == 0 || len(lines) == 0 {
		return nil
	}
	n = min(n, len(lines))
	windows := len(lines) - n + 1
	// Windows by number of equal lines.
	pos := map[string][]int{}
	for k, l := range needle[:n] {
		t := strings.TrimSpace(l)
		pos[t] = append(pos[t], k)
	}
	count := make([]int, windows)
	for j, l := range lines {
		for _, k := range pos[strings.TrimSpace(l)] {
			if i := j - k; i >= 0 && i < windows {
				count[i]++
			}
		}
	}
	cands := topK(count, closestCandidates/2)
	// Windows by the similarity of the needle's longest line to theirs.
	key := 0
	for k, l := range needle[:n] {
		if len(strings.TrimSpace(l)) > len(strings.TrimSpace(needle[key])) {
			key = k
		}
	}
	keyGrams := bigrams(needle[key])
	sim := make([]int, windows)
	for i := range windows {
		sim[i] = int(1000 * dice(keyGrams, bigrams(lines[i+key]), needle[key], lines[i+key]))
	}
	cands = append(cands, topK(sim, closestCandidates/2)...)

	grams := make([]map[string]int, n)
	for k, l := range needle[:n] {
		grams[k] = bigrams(l)
	}
	best, bestAt := -1.0, 0
	for _, i := range cands {
		s := 0.0
		for k := range n {
			s += dice(grams[k], bigrams(lines[i+k]), needle[k], lines[i+k])
		}
		if s > best || s == best && i < bestAt {
			best, bestAt = s, i
		}
	}
	return &Excerpt{
		StartLine:  bestAt + 1,
		Lines:      append([]string(nil), lines[bestAt:bestAt+n]...),
		Similarity: float64(int(best/float64(len(needle))*100)) / 100,
	}
}

// topK returns the indexes of the k highest scores, earliest first on ties.
func topK(score []int, k int) []int {
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return score[b] - score[a] })
	return idx[:min(k, len(idx))]
}

func bigrams(s string) map[string]int {
	s = strings.TrimSpace(s)
	m := make(map[string]int, len(s))
	for i := 0; i+2 <= len(s); i++ {
		m[s[i:i+2]]++
	}
	return m
}

// dice is the Sørensen–Dice similarity of two lines over their character
// bigrams, with leading and trailing space ignored.
func dice(a, b map[string]int, sa, sb string) float64 {
	ta, tb := strings.TrimSpace(sa), strings.TrimSpace(sb)
	if ta == tb {
		return 1
	}
	na, nb := len(ta)-1, len(tb)-1
	if na <= 0 || nb <= 0 {
		return 0
	}
	common := 0
	for g, c := range a {
		common += min(c, b[g])
	}
	return 2 * float64(common) / float64(na+nb)
}

// indentOf returns the leading whitespace of s.
func indentOf(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// reindent shifts repl by the difference between the indentation the file
// has at the match and the one the search text has, for a search that only
// matched ignoring indentation: a model that dropped a level of indentation
// in both halves of a block gets it back in the replacement.
func reindent(search, found, repl []string) []string {
	k := 0
	for k < len(search) && strings.TrimSpace(search[k]) == "" {
		k++
	}
	if k == len(search) {
		return repl
	}
	have, want := indentOf(search[k]), indentOf(found[k])
	out := make([]string, len(repl))
	for i, l := range repl {
		switch {
		case strings.TrimSpace(l) == "":
			out[i] = l
		case strings.HasPrefix(want, have):
			out[i] = want[len(have):] + l
		case strings.HasPrefix(have, want) && strings.HasPrefix(l, have[len(want):]):
			out[i] = l[len(have)-len(want):]
		default:
			out[i] = l
		}
	}
	return out
}

// isSubrange reports whether [p, p+n) lies within [q, q+m).
func isSubrange(p, n, q, m int) bool { return q <= p && p+n <= q+m }

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// shift moves an excerpt of a slice of the file that starts at 0-based
// line off to its place in the whole file.
func (e *Excerpt) shift(off int) *Excerpt {
	if e != nil {
		e.StartLine += off
	}
	return e
}
