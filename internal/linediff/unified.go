package linediff

import (
	"strconv"
	"strings"
)

// Unified returns the unified diff from old to new, in the format of GNU
// `diff -u` (hunk headers, "\ No newline at end of file"), with the given
// labels on its "---" and "+++" lines and context unchanged lines around
// each change. It is "" when old and new are equal.
func Unified(oldLabel, newLabel string, old, new []byte, context int) string {
	if string(old) == string(new) {
		return ""
	}
	a, b := Split(old), Split(new)
	edits := Diff(a, b)
	if len(edits) == 0 {
		return ""
	}
	if context < 0 {
		context = 0
	}
	var sb strings.Builder
	sb.WriteString("--- " + oldLabel + "\n")
	sb.WriteString("+++ " + newLabel + "\n")
	for i := 0; i < len(edits); {
		// A hunk takes every edit whose context would touch the next's.
		j := i + 1
		for j < len(edits) && edits[j].A0-edits[j-1].A1 <= 2*context {
			j++
		}
		first, last := edits[i], edits[j-1]
		a0 := max(first.A0-context, 0)
		a1 := min(last.A1+context, len(a))
		b0 := first.B0 - (first.A0 - a0)
		b1 := last.B1 + (a1 - last.A1)
		sb.WriteString("@@ -" + rangeText(a0, a1-a0) + " +" + rangeText(b0, b1-b0) + " @@\n")
		at := a0
		for _, e := range edits[i:j] {
			writeLines(&sb, ' ', a[at:e.A0])
			writeLines(&sb, '-', a[e.A0:e.A1])
			writeLines(&sb, '+', b[e.B0:e.B1])
			at = e.A1
		}
		writeLines(&sb, ' ', a[at:a1])
		i = j
	}
	return sb.String()
}

// rangeText is a hunk header's range as GNU diff writes it: "l" for one
// line, "l,n" otherwise, and for no lines the number of the line before.
func rangeText(start, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}

func writeLines(sb *strings.Builder, mark byte, lines [][]byte) {
	for _, l := range lines {
		sb.WriteByte(mark)
		sb.Write(l)
		if len(l) == 0 || l[len(l)-1] != '\n' {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// Count returns the number of lines a minimal diff from old to new
// deletes and inserts.
func Count(old, new []byte) (deleted, inserted int) {
	for _, e := range Diff(Split(old), Split(new)) {
		deleted += e.A1 - e.A0
		inserted += e.B1 - e.B0
	}
	return deleted, inserted
}
