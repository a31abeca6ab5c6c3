package session

import "bytes"

// Scanner finds a session's end marker in a stream of chunks without holding
// the content: it keeps only counters and how far the current line still
// matches "[ \t]*MARKER[ \t\r]*". The marker counts only on a line of its own,
// so a marker quoted inside a line, or a look-alike, is ordinary content.
//
// Its fields are exported so a session's scanner state can be journaled with
// its metadata and survive a daemon restart.
type Scanner struct {
	Marker string `json:"marker"`
	// Total counts every byte fed so far.
	Total int64 `json:"total"`
	// LineStart is the offset at which the current line begins.
	LineStart int64 `json:"line_start"`
	// Match is how many marker bytes the current line has matched after its
	// leading blanks, or -1 once the line can no longer be the marker.
	Match int `json:"match"`
	// Found is set once the marker line is terminated by a newline; the
	// content then ends at ContentEnd and everything from TrailStart on is
	// text after the marker.
	Found      bool  `json:"found"`
	ContentEnd int64 `json:"content_end"`
	TrailStart int64 `json:"trail_start"`
	// Newlines counts the newlines before the current line, for line counts.
	Newlines int64 `json:"newlines"`
	// LinePending is true when the current line has any byte, so it counts
	// as a line if it turns out to be content.
	LinePending bool `json:"line_pending"`
}

// NewScanner returns a scanner for marker.
func NewScanner(marker string) Scanner {
	return Scanner{Marker: marker}
}

// Feed consumes the next chunk.
func (s *Scanner) Feed(chunk []byte) {
	if s.Found {
		s.Total += int64(len(chunk))
		return
	}
	for i := 0; i < len(chunk); i++ {
		if s.Match == 0 && !s.LinePending {
			// At a line's start: whole lines without the marker
			// are counted, not stepped through.
			if i += s.skipLines(chunk[i:], s.Total+int64(i)); i == len(chunk) {
				break
			}
		}
		if s.Match < 0 {
			// This line is content whatever follows: skip to its end
			// (most bytes of a chunk are here, and IndexByte is
			// vectorised where a byte loop is not).
			j := bytes.IndexByte(chunk[i:], '\n')
			if j < 0 {
				break
			}
			i += j
		}
		b := chunk[i]
		pos := s.Total + int64(i)
		if b == '\n' {
			if s.Match == len(s.Marker) {
				s.Found = true
				s.ContentEnd = s.LineStart
				s.TrailStart = pos + 1
				s.Total += int64(len(chunk))
				return
			}
			s.Newlines++
			s.LineStart = pos + 1
			s.Match = 0
			s.LinePending = false
			continue
		}
		s.LinePending = true
		s.Match = s.step(b)
	}
	s.Total += int64(len(chunk))
}

// skipLines counts the whole lines at the start of rest, which starts a
// line at offset at of the stream, up to the first that holds the marker
// anywhere (a line without it cannot be the marker line), and returns how
// many bytes they take. Most chunks hold no marker: their lines are then
// counted by two vectorised passes (the search and the count) instead of
// one call per line.
func (s *Scanner) skipLines(rest []byte, at int64) int {
	limit := len(rest)
	if k := bytes.Index(rest, []byte(s.Marker)); k >= 0 {
		limit = k
	}
	end := bytes.LastIndexByte(rest[:limit], '\n') + 1
	if end == 0 {
		return 0
	}
	s.Newlines += int64(bytes.Count(rest[:end], newline))
	s.LineStart = at + int64(end)
	return end
}

var newline = []byte{'\n'}

// step advances the line match by one non-newline byte.
func (s *Scanner) step(b byte) int {
	switch {
	case s.Match < 0:
		return -1
	case s.Match == 0 && (b == ' ' || b == '\t'):
		return 0
	case s.Match < len(s.Marker) && b == s.Marker[s.Match]:
		return s.Match + 1
	case s.Match == len(s.Marker) && (b == ' ' || b == '\t' || b == '\r'):
		return s.Match
	default:
		return -1
	}
}

// MarkerSeen reports whether the marker stands on a line of its own: either
// terminated by a newline, or as the last line of the input so far. The
// second case is provisional: more text on that line would revoke it.
func (s *Scanner) MarkerSeen() bool {
	return s.Found || s.Match == len(s.Marker)
}

// ContentLen is the number of content bytes: everything before the marker
// line if the marker was seen, else everything fed.
func (s *Scanner) ContentLen() int64 {
	switch {
	case s.Found:
		return s.ContentEnd
	case s.Match == len(s.Marker):
		return s.LineStart
	default:
		return s.Total
	}
}

// TrailingLen is the number of bytes after the marker line, which are never
// written.
func (s *Scanner) TrailingLen() int64 {
	if !s.Found {
		return 0
	}
	return s.Total - s.TrailStart
}

// Lines counts the content's lines: every newline, plus a last line without
// one.
func (s *Scanner) Lines() int64 {
	if s.MarkerSeen() {
		// The marker line is not content, and the line before it ended with
		// a newline, so there is no unterminated content line.
		return s.Newlines
	}
	if s.LinePending {
		return s.Newlines + 1
	}
	return s.Newlines
}
