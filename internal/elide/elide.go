// Package elide merges a whole-file text in which a model left out
// unchanged code ("// ... existing code ...") into the file it rewrites:
// each left-out region is taken from the file, found by the unchanged
// lines written around it. It merges only where every such anchor matches
// exactly one place; anywhere else it refuses, naming the candidates.
package elide

import (
	"bytes"
	"fmt"
	"strings"
)

// AmbiguousError says which elision could not be placed, and where its
// anchor matched (1-based lines of the file; none when it matched nowhere).
type AmbiguousError struct {
	Line       int // the elision's line in the text
	Anchor     string
	Candidates []int
}

func (e *AmbiguousError) Error() string {
	if len(e.Candidates) == 0 {
		return fmt.Sprintf("the left-out code at line %d cannot be placed: the line next to it, %q, is not in the file", e.Line, e.Anchor)
	}
	return fmt.Sprintf("the left-out code at line %d cannot be placed: the lines next to it (%q) match the file at lines %s; write more unchanged lines around it, or the code in full", e.Line, e.Anchor, joinInts(e.Candidates))
}

// maxAnchor bounds how many lines an anchor grows to before giving up.
const maxAnchor = 8

// Merge returns text with each elided line (1-based, ascending) replaced by
// the lines of orig it stands for, and how many it replaced.
func Merge(orig, text []byte, elided []int) ([]byte, int, error) {
	o, t := splitLines(orig), splitLines(text)
	segs := make([][]string, 0, len(elided)+1)
	prev := 0
	for _, e := range elided {
		segs = append(segs, t[prev:e-1])
		prev = e
	}
	segs = append(segs, t[prev:])
	var out []string
	cursor := 0
	for k, e := range elided {
		out = append(out, segs[k]...)
		before, after := segs[k], segs[k+1]
		start := 0
		if k > 0 || len(before) > 0 {
			if len(before) == 0 {
				return nil, 0, &AmbiguousError{Line: e, Anchor: "(another elision)"}
			}
			at, anchor, cands := find(o, before, cursor, true)
			if at < 0 {
				return nil, 0, &AmbiguousError{Line: e, Anchor: anchor, Candidates: cands}
			}
			start = at
		}
		end := len(o)
		if k < len(elided)-1 || len(after) > 0 {
			if len(after) == 0 {
				return nil, 0, &AmbiguousError{Line: e, Anchor: "(another elision)"}
			}
			at, anchor, cands := find(o, after, start, false)
			if at < 0 {
				return nil, 0, &AmbiguousError{Line: e, Anchor: anchor, Candidates: cands}
			}
			end = at
		}
		if end < start {
			return nil, 0, &AmbiguousError{Line: e, Anchor: "(the lines around it are out of order in the file)"}
		}
		out = append(out, o[start:end]...)
		cursor = end
	}
	out = append(out, segs[len(segs)-1]...)
	return []byte(strings.Join(out, "")), len(elided), nil
}

// find places the edge of seg next to an elision in o: with tail, the end
// of seg's last lines (where the elided region starts); else the start of
// its first lines (where the region ends). The anchor grows line by line
// until it matches exactly one place in the whole file; that place must be
// at or after from. Blank lines alone never anchor.
//
// Lines at the edge that are nowhere in the file, not even with other
// blanks, are new lines the model wrote next to the elision: they stay in
// the text, and the anchor is the nearest lines the file has.
func find(o, seg []string, from int, tail bool) (at int, anchor string, cands []int) {
	for len(seg) > 1 {
		edge := seg[0]
		if tail {
			edge = seg[len(seg)-1]
		}
		// A line the file has with other indentation is a changed line,
		// not a new one: it ends the skipping, and as an anchor it will
		// not match.
		if strings.TrimSpace(edge) == "" || containsLoose(o, edge) {
			break
		}
		if tail {
			seg = seg[:len(seg)-1]
		} else {
			seg = seg[1:]
		}
	}
	for n := 1; n <= len(seg) && n <= maxAnchor; n++ {
		a := seg[:n]
		if tail {
			a = seg[len(seg)-n:]
		}
		if blankOnly(a) {
			continue
		}
		var hits []int
		for i := 0; i+n <= len(o); i++ {
			if equal(o[i:i+n], a) {
				hits = append(hits, i)
			}
		}
		anchor = strings.TrimSpace(strings.Join(a, ""))
		cands = cands[:0]
		for _, h := range hits {
			cands = append(cands, h+1)
		}
		switch {
		case len(hits) == 0:
			return -1, anchor, nil // a longer anchor will not match either
		case len(hits) == 1:
			if hits[0] < from {
				return -1, anchor, cands
			}
			if tail {
				return hits[0] + n, anchor, nil
			}
			return hits[0], anchor, nil
		}
	}
	return -1, anchor, cands
}

func containsLoose(o []string, l string) bool {
	l = strings.Join(strings.Fields(l), " ")
	for _, x := range o {
		if strings.Join(strings.Fields(x), " ") == l {
			return true
		}
	}
	return false
}

func equal(a, b []string) bool {
	for i := range a {
		if strings.TrimRight(a[i], " \t\r\n") != strings.TrimRight(b[i], " \t\r\n") {
			return false
		}
	}
	return true
}

func blankOnly(ls []string) bool {
	for _, l := range ls {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

// splitLines splits b into lines that keep their endings.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
