package controller

import (
	"regexp"
	"strconv"
)

// placeholder matches {{marker}} and {{marker:FROM:TO}}, a byte slice of
// the marker, so a recording can split the marker across deltas anywhere.
var placeholder = regexp.MustCompile(`\{\{marker(?::(\d+):(\d+))?\}\}`)

// Replay substitutes the placeholders of a recorded stream line with
// marker, the live session's end marker. A recording's own marker belonged
// to the session it was recorded with; the placeholder stands where the
// model wrote it. Slices out of range are clamped.
func Replay(line, marker string) string {
	return placeholder.ReplaceAllStringFunc(line, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		if sub[1] == "" {
			return marker
		}
		from, _ := strconv.Atoi(sub[1])
		to, _ := strconv.Atoi(sub[2])
		to = min(to, len(marker))
		from = min(from, to)
		return marker[from:to]
	})
}
