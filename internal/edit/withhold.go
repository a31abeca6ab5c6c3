package edit

import (
	"fmt"
	"regexp"
	"strings"
)

// closestHeaderRE is the line Error writes before an excerpt.
var closestHeaderRE = regexp.MustCompile(`^closest lines of the file \((\d+)% similar\):$`)

// excerptLineRE is a line of an excerpt as Excerpt.String writes it.
var excerptLineRE = regexp.MustCompile(`^ *(\d+) \| `)

// WithoutFileText returns msg, a message that holds an edit error's text
// as Error writes it, with the file's lines taken out of every
// closest-lines excerpt. What did not match, which part, and which lines
// of the file came closest (their numbers and similarity) stay: enough for
// a caller who can read the file to fix the edit, nothing of the file for
// one who cannot. A door that cannot prove its caller is the file's owner
// passes failures through it.
//
// The excerpt's lines are found by their shape, right after their header:
// a file line holds no line break, so each is one line of msg.
func WithoutFileText(msg string) string {
	if !strings.Contains(msg, "closest lines of the file (") {
		return msg
	}
	lines := strings.Split(msg, "\n")
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		m := closestHeaderRE.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		first, last := "", ""
		for i+1 < len(lines) {
			n := excerptLineRE.FindStringSubmatch(lines[i+1])
			if n == nil {
				break
			}
			if first == "" {
				first = n[1]
			}
			last = n[1]
			i++
		}
		where := "lines " + first + "-" + last
		switch {
		case first == "":
			where = "lines not shown"
		case first == last:
			where = "line " + first
		}
		out = append(out, fmt.Sprintf("closest lines of the file: %s (%s%% similar); their text is withheld here, read them with your own tools", where, m[1]))
	}
	return strings.Join(out, "\n")
}
