package elide_test

import (
	"path/filepath"
	"strings"
)

// continueCase is one of Continue's lazy-apply examples (testdata/continue,
// kept verbatim): the file, the model's text with elisions, and the change
// expected as a diff whose unprefixed lines are the file's own.
type continueCase struct {
	name, target     string
	orig, text, want string
	parsed           bool
}

// parseContinue reads Continue's format: three parts split by "\n---\n",
// each trimmed as Continue's own runner trims them. The expected result is
// rebuilt by walking the diff over the file, so unchanged lines keep the
// file's bytes; a diff that does not walk the file (a markdown rule taken
// for a separator) leaves the case unparsed rather than guessed.
func parseContinue(name string, b []byte) continueCase {
	c := continueCase{name: name, target: continueTarget(name)}
	parts := strings.Split(string(b), "\n---\n")
	if len(parts) != 3 {
		return c
	}
	c.orig = strings.TrimSpace(parts[0]) + "\n"
	c.text = strings.TrimSpace(parts[1]) + "\n"
	orig := strings.Split(strings.TrimSuffix(c.orig, "\n"), "\n")
	diff := strings.Split(strings.TrimSpace(parts[2]), "\n")
	// Continue wrote "+line" in some files and "+ line" in others; the
	// convention is the one under which the removed lines are the file's.
	// Where both walk, the added lines the model wrote out decide it, and
	// failing that the indentation the file already uses.
	indents := map[string]bool{}
	for _, l := range orig {
		indents[l[:len(l)-len(strings.TrimLeft(l, " \t"))]] = true
	}
	type score struct{ hits, indented int }
	best, bestScore, walked := "", score{-1, -1}, 0
	tie := false
	for _, sep := range []string{"", " "} {
		want, ok := walkDiff(orig, diff, sep, c.text)
		if !ok {
			continue
		}
		walked++
		var sc score
		for _, d := range diff {
			l, ok := strings.CutPrefix(d, "+"+sep)
			if !ok || strings.TrimSpace(l) == "" {
				continue
			}
			if strings.Contains(c.text, "\n"+l+"\n") {
				sc.hits++
			}
			if indents[l[:len(l)-len(strings.TrimLeft(l, " \t"))]] {
				sc.indented++
			}
		}
		switch {
		case sc == bestScore:
			tie = true
		case sc.hits > bestScore.hits || sc.hits == bestScore.hits && sc.indented > bestScore.indented:
			best, bestScore, tie = want, sc, false
		}
	}
	if walked == 0 || tie {
		return c // no way to tell; not graded rather than guessed
	}
	c.want, c.parsed = best, true
	return c
}

func walkDiff(orig, diff []string, sep, text string) (string, bool) {
	var out []string
	i := 0
	// Some expected diffs are indented differently from the file they
	// change (Continue compares loosely); the file's own line is kept.
	same := func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }
	// An added line is written as the model wrote it, where it wrote it
	// exactly once: the diff may show it re-indented.
	written := map[string][]string{}
	for _, l := range strings.Split(text, "\n") {
		written[strings.TrimSpace(l)] = append(written[strings.TrimSpace(l)], l)
	}
	// Later examples show hunks, not the whole file: lines a hunk skips
	// are unchanged, so a line is looked for from where the walk stands.
	seek := func(l string) bool {
		for j := i; j < len(orig); j++ {
			if same(orig[j], l) {
				out = append(out, orig[i:j]...)
				i = j
				return true
			}
		}
		return false
	}
	for _, d := range diff {
		switch {
		case strings.HasPrefix(d, "+"):
			l := strings.TrimPrefix(d, "+")
			if sep != "" && l != "" && !strings.HasPrefix(l, sep) {
				return "", false
			}
			l = strings.TrimPrefix(l, sep)
			if w := written[strings.TrimSpace(l)]; strings.TrimSpace(l) != "" && len(w) == 1 {
				l = w[0]
			}
			out = append(out, l)
		case strings.HasPrefix(d, "-"):
			l := d[1:]
			if sep != "" && l != "" && !strings.HasPrefix(l, sep) {
				return "", false
			}
			if !seek(strings.TrimPrefix(l, sep)) {
				return "", false
			}
			i++
		case strings.TrimSpace(d) == "":
			// Blank lines around a hunk are shown loosely: one the file
			// has is kept, one it lacks is not taken as added.
			if i < len(orig) && strings.TrimSpace(orig[i]) == "" {
				out = append(out, orig[i])
				i++
			}
		default:
			if !seek(d) {
				return "", false
			}
			out = append(out, orig[i])
			i++
		}
	}
	out = append(out, orig[i:]...)
	return strings.Join(out, "\n") + "\n", true
}

// continueTarget names the file the way the example's language needs, for
// the comment forms an elision is written in.
func continueTarget(name string) string {
	base := strings.TrimSuffix(name, ".diff")
	switch {
	case filepath.Ext(base) != "":
		return base
	case strings.HasPrefix(base, "markdown-"):
		return base + ".md"
	case strings.HasPrefix(base, "react-"):
		return base + ".tsx"
	}
	return base + ".ts"
}
