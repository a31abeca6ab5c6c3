// Package linediff computes minimal line diffs: the fewest lines deleted
// plus inserted that turn one text into another, as GNU diff and git do.
//
// It exists because the diff library the project used for display
// (go-udiff) caps its search at a depth of 50 and, past that, returns one
// block that deletes and re-adds everything between the first and last
// change: on a file where every third line changed, about twice the lines
// a minimal diff shows, and a three-way merge built on such a diff would
// see one change where there are many disjoint ones. Here the search is
// Myers' O(ND) algorithm in linear space (the middle snake, as GNU diff
// and git's xdiff do), on integer ids of whole lines.
//
// Lines keep their own endings: "a\r\n" and "a\n" are different lines,
// and a last line without a newline differs from the same text with one.
// Nothing is normalised, so applying the edits to the old lines gives the
// new bytes exactly.
package linediff

import "bytes"

// Split cuts b into lines, each ending with its "\n" (a "\r\n" line keeps
// its "\r"); the last line has no newline when b does not end with one.
// Empty input has no lines.
func Split(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	lines := make([][]byte, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, b)
			break
		}
		lines = append(lines, b[:i+1:i+1])
		b = b[i+1:]
	}
	return lines
}

// Edit replaces the old lines [A0, A1) with the new lines [B0, B1). An
// insertion has A0 == A1, a deletion B0 == B1.
type Edit struct {
	A0, A1 int
	B0, B1 int
}

// Diff returns the edits that turn a into b, in order, none touching the
// next (at least one unchanged line lies between two edits). The number
// of lines they delete plus insert is minimal, except on inputs so unlike
// that the search passes its cost bound (see maxCost), where, like GNU
// diff, it settles for a diff that is correct but may be longer.
func Diff(a, b [][]byte) []Edit {
	ids := make(map[string]int, len(a)+len(b))
	id := func(lines [][]byte) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			n, ok := ids[string(l)]
			if !ok {
				n = len(ids)
				ids[string(l)] = n
			}
			out[i] = n
		}
		return out
	}
	return DiffIDs(id(a), id(b))
}

// DiffIDs is Diff on lines already mapped to integers (equal lines, equal
// ids).
func DiffIDs(a, b []int) []Edit {
	return diffIDs(a, b, workBudget+workPerLine*int64(len(a)+len(b)))
}

func diffIDs(a, b []int, budget int64) []Edit {
	// A line with no equal on the other side is changed whatever the
	// alignment: it leaves the search, which then runs on the lines that
	// could match (as xdiff and GNU diff do). The diff stays minimal, and
	// a file rewritten in a region costs only that region's matches.
	ra, rb := matchable(a, b), matchable(b, a)
	ca, cb := pick(a, ra), pick(b, rb)
	n, m := len(ca), len(cb)
	d := &differ{a: ca, b: cb}
	size := n + m + 1
	d.vf = make([]int, 2*size+1)
	d.vb = make([]int, 2*size+1)
	d.delA = make([]bool, n)
	d.insB = make([]bool, m)
	d.maxCost = maxCost(n + m)
	d.budget = budget
	d.compare(0, n, 0, m)

	del, ins := make([]bool, len(a)), make([]bool, len(b))
	spread(del, ra, d.delA)
	spread(ins, rb, d.insB)
	compact(del, a)
	compact(ins, b)
	return runs(del, ins)
}

// compact slides each run of changed lines over equal neighbours, as
// xdiff does: up as far as it goes, joining the run before it, then down
// as far as it goes, joining the run after. A minimal diff often has a
// choice (an added blank line in a run of blank lines, a deleted block
// whose last line equals the line before it); sliding every run the same
// way makes the choice git's, so that a three-way merge sees the same
// changes, and two runs split by an equal line become one. Each slide
// swaps a changed line for an equal unchanged one, so the diff stays
// correct and as short.
func compact(changed []bool, x []int) {
	n := len(changed)
	for i := 0; i < n; {
		if !changed[i] {
			i++
			continue
		}
		start, end := i, i
		for end < n && changed[end] {
			end++
		}
		for {
			size := end - start
			for start > 0 && x[start-1] == x[end-1] {
				start--
				end--
				changed[start], changed[end] = true, false
				for start > 0 && changed[start-1] {
					start--
				}
			}
			for end < n && x[start] == x[end] {
				changed[start], changed[end] = false, true
				start++
				end++
				for end < n && changed[end] {
					end++
				}
			}
			if end-start == size {
				break
			}
		}
		i = end
	}
}

// matchable lists the indexes of x whose id occurs in y.
func matchable(x, y []int) []int {
	in := make(map[int]struct{}, len(y))
	for _, v := range y {
		in[v] = struct{}{}
	}
	out := make([]int, 0, len(x))
	for i, v := range x {
		if _, ok := in[v]; ok {
			out = append(out, i)
		}
	}
	return out
}

func pick(x, idx []int) []int {
	out := make([]int, len(idx))
	for k, i := range idx {
		out[k] = x[i]
	}
	return out
}

// spread marks every line changed but those the reduced search kept.
func spread(full []bool, idx []int, reduced []bool) {
	for i := range full {
		full[i] = true
	}
	for k, i := range idx {
		full[i] = reduced[k]
	}
}

// maxCost bounds the depth of one middle-snake search, so that the work
// on two wholly different large files stays near linear times the bound
// rather than quadratic. The figure is GNU diff's: about the square root
// of the input's length, and never below 4096, so that every diff of a
// file under a few thousand changed lines is exact.
func maxCost(total int) int {
	c := 1
	for diags := total + 3; diags != 0; diags >>= 2 {
		c <<= 1
	}
	if c < 4096 {
		c = 4096
	}
	return c
}

type differ struct {
	a, b       []int
	vf, vb     []int
	delA, insB []bool
	maxCost    int
	// work counts the steps taken (diagonals visited, lines compared);
	// past budget, what is left of the input is diffed as a whole.
	work, budget int64
}

// The search's budget. The cost bound alone keeps one search near
// linear, but lines drawn from a small alphabet (a file of single
// characters, or hostile input) make many such searches, enough for
// minutes on a few megabytes. Past the budget, a fraction of a second of work,
// each remaining region is one change: a correct diff, longer than
// minimal, and a merge built on it only conflicts more, never less.
// Real edits stay far below it.
const (
	workBudget  = 1 << 26
	workPerLine = 32
)

// compare marks the deleted lines of a[lo:hi] and inserted lines of
// b[blo:bhi], by Myers' divide and conquer on the middle snake.
func (d *differ) compare(alo, ahi, blo, bhi int) {
	for {
		if d.work > d.budget {
			for i := alo; i < ahi; i++ {
				d.delA[i] = true
			}
			for i := blo; i < bhi; i++ {
				d.insB[i] = true
			}
			return
		}
		// Common prefix and suffix are matched as they are: no search.
		for alo < ahi && blo < bhi && d.a[alo] == d.b[blo] {
			alo++
			blo++
		}
		for alo < ahi && blo < bhi && d.a[ahi-1] == d.b[bhi-1] {
			ahi--
			bhi--
		}
		switch {
		case alo == ahi:
			for i := blo; i < bhi; i++ {
				d.insB[i] = true
			}
			return
		case blo == bhi:
			for i := alo; i < ahi; i++ {
				d.delA[i] = true
			}
			return
		}
		x, y := d.split(alo, ahi, blo, bhi)
		// Recurse on the smaller half and loop on the larger, so the
		// stack stays logarithmic.
		if (x-alo)+(y-blo) < (ahi-x)+(bhi-y) {
			d.compare(alo, x, blo, y)
			alo, blo = x, y
		} else {
			d.compare(x, ahi, y, bhi)
			ahi, bhi = x, y
		}
	}
}

// split finds a point (x, y) on a shortest edit path from (alo, blo) to
// (ahi, bhi), strictly inside it, by running the search from both ends
// until the paths meet. Both ranges are non-empty and their first and
// last lines differ.
func (d *differ) split(alo, ahi, blo, bhi int) (int, int) {
	a, b := d.a, d.b
	off := len(a) + len(b) + 1 // index of diagonal 0 in vf, vb
	fmid := alo - blo          // diagonal of the forward start
	bmid := ahi - bhi          // diagonal of the backward start
	delta := bmid - fmid
	odd := delta&1 != 0
	// vf[off+k]: furthest x on diagonal k (x - y == k) forward;
	// vb[off+k]: smallest x on diagonal k backward.
	d.vf[off+fmid] = alo
	d.vb[off+bmid] = ahi
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	dmin, dmax := alo-bhi, ahi-blo // diagonals inside the box
	for cost := 1; ; cost++ {
		// Forward: extend each diagonal by one edit and slide its snake.
		if fmin > dmin {
			fmin--
			d.vf[off+fmin-1] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			d.vf[off+fmax+1] = -1
		} else {
			fmax--
		}
		for k := fmax; k >= fmin; k -= 2 {
			lo, hi := d.vf[off+k-1], d.vf[off+k+1]
			var x int
			if lo >= hi {
				x = lo + 1
			} else {
				x = hi
			}
			y := x - k
			x0 := x
			for x < ahi && y < bhi && a[x] == b[y] {
				x++
				y++
			}
			d.work += int64(x-x0) + 1
			d.vf[off+k] = x
			if odd && bmin <= k && k <= bmax && d.vb[off+k] <= x {
				return x, y
			}
		}
		// Backward, the same from the far corner.
		if bmin > dmin {
			bmin--
			d.vb[off+bmin-1] = int(^uint(0) >> 1)
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			d.vb[off+bmax+1] = int(^uint(0) >> 1)
		} else {
			bmax--
		}
		for k := bmax; k >= bmin; k -= 2 {
			lo, hi := d.vb[off+k-1], d.vb[off+k+1]
			var x int
			if lo < hi {
				x = lo
			} else {
				x = hi - 1
			}
			y := x - k
			x0 := x
			for x > alo && y > blo && a[x-1] == b[y-1] {
				x--
				y--
			}
			d.work += int64(x0-x) + 1
			d.vb[off+k] = x
			if !odd && fmin <= k && k <= fmax && x <= d.vf[off+k] {
				return x, y
			}
		}
		if cost >= d.maxCost || d.work > d.budget {
			// Too expensive to be exact: split at the forward point that
			// got furthest, as GNU diff does. The result is still a
			// correct diff.
			best, bx, by := -1, 0, 0
			for k := fmax; k >= fmin; k -= 2 {
				x := d.vf[off+k]
				y := x - k
				if x < alo || x > ahi || y < blo || y > bhi {
					continue
				}
				if x+y > best && x+y < ahi+bhi {
					best, bx, by = x+y, x, y
				}
			}
			if best > alo+blo {
				return bx, by
			}
			// Fall back to peeling one line each, always progress.
			return alo + 1, blo + 1
		}
	}
}

// runs turns the marks into edits.
func runs(delA, insB []bool) []Edit {
	var out []Edit
	i, j := 0, 0
	n, m := len(delA), len(insB)
	for i < n || j < m {
		if i < n && j < m && !delA[i] && !insB[j] {
			i++
			j++
			continue
		}
		e := Edit{A0: i, B0: j}
		for i < n && delA[i] {
			i++
		}
		for j < m && insB[j] {
			j++
		}
		e.A1, e.B1 = i, j
		out = append(out, e)
	}
	return out
}
