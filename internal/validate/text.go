package validate

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// bom is the UTF-8 byte order mark.
var bom = []byte{0xEF, 0xBB, 0xBF}

// lines indexes the line starts of a text so that byte offsets can be turned
// into the 1-based line and character column a model understands.
type lines struct {
	src    []byte
	starts []int // offset of the first byte of each line
	// str is src as a string, made once text was asked for more than a
	// few lines or for lines adding up to a quarter of src (reads and
	// copied count them): a check that goes through every line, often
	// several times, then copies the content once rather than each line
	// at each look, while one that reads only the last few lines copies
	// only those.
	str           string
	reads, copied int
}

func newLines(src []byte) *lines {
	starts := make([]int, 1, 1+bytes.Count(src, []byte{'\n'}))
	// IndexByte, not a look at each byte: it finds the next newline many
	// bytes at a time, and a file's lines are tens of bytes long.
	for i := 0; ; {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		starts = append(starts, i)
	}
	return &lines{src: src, starts: starts}
}

// position converts a byte offset to a 1-based line and a 1-based column in
// characters. Offsets past the end are clamped to the end.
func (l *lines) position(off int) (line, col int) {
	off = max(0, min(off, len(l.src)))
	i := sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > off }) - 1
	return i + 1, utf8.RuneCount(l.src[l.starts[i]:off]) + 1
}

// offset converts a 1-based line and a 1-based byte column to an offset.
func (l *lines) offset(line, byteCol int) int {
	if line < 1 {
		return 0
	}
	if line > len(l.starts) {
		return len(l.src)
	}
	return min(l.starts[line-1]+max(byteCol-1, 0), len(l.src))
}

// text returns line n (1-based) without its line ending.
func (l *lines) text(n int) string {
	start, end, ok := l.span(n)
	if !ok {
		return ""
	}
	if len(l.str) != len(l.src) {
		line := l.src[start:end]
		l.reads, l.copied = l.reads+1, l.copied+len(line)
		if l.reads <= 16 && l.copied <= len(l.src)/4 {
			return strings.TrimSuffix(string(line), "\r")
		}
		l.str = string(l.src)
	}
	return strings.TrimSuffix(l.str[start:end], "\r")
}

// span is where line n (1-based) lies in src, its line ending left out
// but for a CR; ok is false for a line src does not have.
func (l *lines) span(n int) (start, end int, ok bool) {
	if n < 1 || n > len(l.starts) {
		return 0, 0, false
	}
	end = len(l.src)
	if n < len(l.starts) {
		end = l.starts[n] - 1
	}
	return l.starts[n-1], end, true
}

// view is line n as text reads it, without a copy: a string over src
// that the caller looks at and lets go of, never keeps (nothing derived
// from it may outlive the look, as src may be written to afterwards by
// its owner). It does not count as a read of text.
func (l *lines) view(n int) string {
	start, end, ok := l.span(n)
	if !ok {
		return ""
	}
	line := l.src[start:end]
	if len(line) == 0 {
		return ""
	}
	return strings.TrimSuffix(unsafe.String(unsafe.SliceData(line), len(line)), "\r")
}

// lastNonBlank returns the number of the last line that has a non-blank
// character, or 0 for blank content.
func (l *lines) lastNonBlank() int {
	// Bytes, not text: the last lines are all this looks at.
	for n := len(l.starts); n >= 1; n-- {
		end := len(l.src)
		if n < len(l.starts) {
			end = l.starts[n] - 1
		}
		if len(bytes.TrimSpace(l.src[l.starts[n-1]:end])) > 0 {
			return n
		}
	}
	return 0
}

// contentEnd is the offset just past the last non-whitespace byte.
func contentEnd(src []byte) int {
	return len(bytes.TrimRight(src, " \t\r\n\f\v"))
}

// snippet shortens a line for a finding.
func snippet(s string) string {
	s = strings.TrimRight(s, " \t\r")
	const max = 160
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// quoteLine renders a line for use inside a message.
func quoteLine(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > 60 {
		s = "…" + string([]rune(s)[utf8.RuneCountInString(s)-60:])
	}
	return "`" + s + "`"
}
