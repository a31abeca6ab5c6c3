package daemon

import (
	"strings"
	"unicode"
)

// processName cleans a process name for session info: printable, one
// line, at most 64 bytes (Linux keeps 15).
func processName(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	s := strings.TrimRight(strings.ToValidUTF8(string(b), ""), "\n")
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s)
}
