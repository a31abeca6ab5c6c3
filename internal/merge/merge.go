// Package merge merges two changes of one file three-way, line by line,
// with the rules of `git merge-file`: a change of one side lands where the
// other side left those lines alone; changes of both sides that overlap,
// or merely touch (one ends on the line where the other starts, or both
// insert at the same place), conflict unless they are the same change.
// Touching changes conflict because no line of the base separates them,
// so nothing says which order a reader meant; git refuses them for the
// same reason, and a merge here is never cleaner than git's.
//
// One merge serves every place the daemon reconciles two writers: a
// finalize whose target a person edited meanwhile, the undo of a session
// or transaction after later edits, and the undo of an agent's turn.
// Nothing is normalised: lines keep their own endings, and a file's last
// line keeps or lacks its newline, so no byte of either side is lost or
// changed by the merge.
package merge

import (
	"bytes"

	"github.com/orion-agent/orion/internal/linediff"
)

// Result is the outcome of Merge3.
type Result struct {
	// Merged is the merged content; valid only when Clean.
	Merged []byte
	// Clean is true when no changes conflicted.
	Clean bool
	// Conflicts are the overlapping (or touching) changes, in order.
	Conflicts []Conflict
	// OursHunks are ours' changes relative to base that were kept, so a
	// caller can say "merged with the other side's hunks".
	OursHunks []Hunk
}

// Conflict is a region of base that both sides changed differently.
type Conflict struct {
	// BaseStart and BaseEnd are the 0-based line range [BaseStart,
	// BaseEnd) of base the conflict covers (equal for an insertion).
	BaseStart, BaseEnd int
	// Base, Ours and Theirs are that region's text on each side.
	Base, Ours, Theirs []byte
}

// Hunk is one change of a side relative to base: base's lines
// [BaseStart, BaseEnd), whose text was Old, became New.
type Hunk struct {
	BaseStart, BaseEnd int
	Old, New           []byte
}

// binaryProbe is how far IsBinary looks, as git does.
const binaryProbe = 8000

// IsBinary reports whether b looks binary the way git decides it: a NUL
// byte in its first 8000 bytes. A binary file is never merged line by
// line.
func IsBinary(b []byte) bool {
	if len(b) > binaryProbe {
		b = b[:binaryProbe]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// Merge3 applies the change from base to theirs onto ours, line by line
// (lines keep their own endings). When one side equals base, or both
// sides are equal, the result is the other side, whatever the content.
// Otherwise a binary side (IsBinary) makes the whole file one conflict.
func Merge3(base, ours, theirs []byte) Result {
	switch {
	case bytes.Equal(base, theirs):
		return Result{Merged: clone(ours), Clean: true, OursHunks: hunks(base, ours)}
	case bytes.Equal(base, ours):
		return Result{Merged: clone(theirs), Clean: true}
	case bytes.Equal(ours, theirs):
		return Result{Merged: clone(ours), Clean: true, OursHunks: hunks(base, ours)}
	case IsBinary(base) || IsBinary(ours) || IsBinary(theirs):
		return Result{Conflicts: []Conflict{{
			BaseStart: 0, BaseEnd: len(linediff.Split(base)),
			Base: clone(base), Ours: clone(ours), Theirs: clone(theirs),
		}}}
	}

	bl, ol, tl := linediff.Split(base), linediff.Split(ours), linediff.Split(theirs)
	ids := map[string]int{}
	bi, oi, ti := lineIDs(ids, bl), lineIDs(ids, ol), lineIDs(ids, tl)
	eo, et := linediff.DiffIDs(bi, oi), linediff.DiffIDs(bi, ti)

	var res Result
	var out bytes.Buffer
	out.Grow(max(len(ours), len(theirs)))
	pos := 0 // next line of base not yet copied
	i, j := 0, 0
	for i < len(eo) || j < len(et) {
		// A group starts at the earlier change and takes every change of
		// either side that overlaps or touches it, transitively.
		var lo, hi int
		if j >= len(et) || (i < len(eo) && eo[i].A0 <= et[j].A0) {
			lo, hi = eo[i].A0, eo[i].A1
		} else {
			lo, hi = et[j].A0, et[j].A1
		}
		i0, j0 := i, j
		for {
			switch {
			case i < len(eo) && eo[i].A0 <= hi:
				hi = max(hi, eo[i].A1)
				i++
			case j < len(et) && et[j].A0 <= hi:
				hi = max(hi, et[j].A1)
				j++
			default:
				goto grouped
			}
		}
	grouped:
		out.Write(join(bl[pos:lo]))
		pos = hi
		og, tg := eo[i0:i], et[j0:j]
		oursText := side(bl, ol, og, lo, hi)
		theirsText := side(bl, tl, tg, lo, hi)
		switch {
		case len(og) == 0:
			out.Write(theirsText)
		case len(tg) == 0 || bytes.Equal(oursText, theirsText):
			out.Write(oursText)
			for _, e := range og {
				res.OursHunks = append(res.OursHunks, hunk(bl, ol, e))
			}
		default:
			res.Conflicts = append(res.Conflicts, Conflict{
				BaseStart: lo, BaseEnd: hi,
				Base: join(bl[lo:hi]), Ours: oursText, Theirs: theirsText,
			})
		}
	}
	out.Write(join(bl[pos:]))
	res.Clean = len(res.Conflicts) == 0
	if res.Clean {
		res.Merged = out.Bytes()
	}
	return res
}

// side is one side's text for base's lines [lo, hi), given that side's
// edits inside that range (none touches its ends from outside).
func side(base, lines [][]byte, edits []linediff.Edit, lo, hi int) []byte {
	if len(edits) == 0 {
		return join(base[lo:hi])
	}
	first, last := edits[0], edits[len(edits)-1]
	return join(lines[first.B0-(first.A0-lo) : last.B1+(hi-last.A1)])
}

func hunk(base, lines [][]byte, e linediff.Edit) Hunk {
	return Hunk{BaseStart: e.A0, BaseEnd: e.A1, Old: join(base[e.A0:e.A1]), New: join(lines[e.B0:e.B1])}
}

// hunks lists every change from base to other.
func hunks(base, other []byte) []Hunk {
	bl, ol := linediff.Split(base), linediff.Split(other)
	var hs []Hunk
	for _, e := range linediff.Diff(bl, ol) {
		hs = append(hs, hunk(bl, ol, e))
	}
	return hs
}

func lineIDs(ids map[string]int, lines [][]byte) []int {
	out := make([]int, len(lines))
	for k, l := range lines {
		n, ok := ids[string(l)]
		if !ok {
			n = len(ids)
			ids[string(l)] = n
		}
		out[k] = n
	}
	return out
}

func join(lines [][]byte) []byte {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b := make([]byte, 0, n)
	for _, l := range lines {
		b = append(b, l...)
	}
	return b
}

func clone(b []byte) []byte { return append([]byte{}, b...) }
