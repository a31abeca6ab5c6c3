package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// diffForPerson relabels the file headers of a diff from oriond, which
// names each file by its absolute path as "--- a/tmp/x" (git's prefix
// glued to an absolute path): a file under the current directory becomes
// "a/rel" and "b/rel", as git names paths relative to the top of a tree,
// and any other file its plain absolute path. Only header lines are
// touched: the lines of a hunk are counted from its @@ line, so content
// that looks like a header stays as it is.
func diffForPerson(diff string) string {
	if diff == "" {
		return diff
	}
	wd, _ := os.Getwd()
	lines := strings.SplitAfter(diff, "\n")
	oldLeft, newLeft := 0, 0
	for i, l := range lines {
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(l, " "):
				oldLeft--
				newLeft--
			case strings.HasPrefix(l, "-"):
				oldLeft--
			case strings.HasPrefix(l, "+"):
				newLeft--
			}
			continue
		}
		switch {
		case strings.HasPrefix(l, "@@ "):
			oldLeft, newLeft = hunkCounts(l)
		case strings.HasPrefix(l, "--- a/"):
			lines[i] = "--- " + relabel(strings.TrimPrefix(l, "--- a/"), "a/", wd)
		case strings.HasPrefix(l, "+++ b/"):
			lines[i] = "+++ " + relabel(strings.TrimPrefix(l, "+++ b/"), "b/", wd)
		}
	}
	return strings.Join(lines, "")
}

// relabel is the header's path (rest, with its line end) as a person
// finds it from wd.
func relabel(rest, prefix, wd string) string {
	name, end, _ := strings.Cut(rest, "\n")
	if end != "" || strings.HasSuffix(rest, "\n") {
		end = "\n" + end
	}
	abs := "/" + name
	if wd != "" {
		if rel, err := filepath.Rel(wd, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return prefix + rel + end
		}
	}
	return abs + end
}

// hunkCounts are the old and new line counts of a hunk header
// "@@ -a,b +c,d @@" (a missing count is 1).
func hunkCounts(h string) (int, int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, 0
	}
	count := func(r string) int {
		_, n, ok := strings.Cut(r[1:], ",")
		if !ok {
			return 1
		}
		v, err := strconv.Atoi(n)
		if err != nil {
			return 0
		}
		return v
	}
	return count(f[1]), count(f[2])
}
