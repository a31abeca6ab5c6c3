package controller

import (
	"strings"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// session is the controller's side of one write session: where the model's
// text stands against the end marker, and the content not yet sent.
type session struct {
	// id and marker are the daemon session that receives content now;
	// they change when a truncated session is continued.
	id     string
	marker string
	// markers are the end markers the model may close this file with: the
	// one it was first told, then those of continuations.
	markers []string
	// shown is the target as the model named it; target as resolved.
	shown  string
	target string
	op     protocol.Operation

	nextSeq uint64
	// pend is content not yet sent; pendSince when its oldest byte came.
	pend      []byte
	pendSince time.Time
	// retrySize is the size of the chunk at the front of pend whose
	// background append failed: the next append sends exactly it again.
	retrySize int
	// The current line of the model's text. While it may still turn out
	// to be a marker line (candidate), its bytes stay in pend from
	// lineStart on, so a marker the daemon does not know can be dropped;
	// lineStart is -1 once part of it was sent.
	line      []byte
	candidate bool
	lineStart int

	idlePrompts int
	// truncated: the daemon ended the session without its marker; content
	// that still comes continues it in a chained session.
	truncated bool
	// failed: the daemon refused the session's content; the rest of the
	// file's text is dropped up to its marker line, so it does not spill
	// into the conversation as chat.
	failed bool
}

func newSession(res protocol.BeginResult, shown string) *session {
	return &session{
		id:        res.SessionID,
		marker:    res.EndMarker,
		markers:   []string{res.EndMarker},
		shown:     shown,
		target:    res.TargetFile,
		op:        res.Operation,
		nextSeq:   1,
		candidate: true,
	}
}

// scan takes the model's text up to the end of a marker line (its newline
// included) or all of it into pend. It returns how much it took and the
// marker when a marker line ended.
func (s *session) scan(text string) (n int, marker string) {
	base := len(s.pend)
	for i := 0; i < len(text); i++ {
		b := text[i]
		if b == '\n' {
			if s.candidate {
				if m := s.fullMarker(); m != "" {
					s.pend = append(s.pend, text[:i+1]...)
					return i + 1, m
				}
			}
			s.candidate, s.line, s.lineStart = true, s.line[:0], base+i+1
			continue
		}
		if s.candidate {
			s.line = append(s.line, b)
			if !s.mayBeMarker() {
				s.candidate, s.line = false, s.line[:0]
			}
		}
	}
	s.pend = append(s.pend, text...)
	return len(text), ""
}

// rest is the current line without its leading blanks, which the daemon's
// scanner skips too.
func (s *session) rest() string {
	return strings.TrimLeft(string(s.line), " \t")
}

// mayBeMarker reports whether the current line can still become a marker
// line: blanks, then a prefix of a marker, or a whole marker and blanks.
func (s *session) mayBeMarker() bool {
	r := s.rest()
	for _, m := range s.markers {
		if strings.HasPrefix(m, r) {
			return true
		}
		if strings.HasPrefix(r, m) && strings.Trim(r[len(m):], " \t\r") == "" {
			return true
		}
	}
	return false
}

// fullMarker returns the marker the current line is, or "".
func (s *session) fullMarker() string {
	if !s.candidate {
		return ""
	}
	r := s.rest()
	for _, m := range s.markers {
		if strings.HasPrefix(r, m) && strings.Trim(r[len(m):], " \t\r") == "" {
			return m
		}
	}
	return ""
}

// sendable is how many pending bytes may be sent now: all but a line that
// may still be a marker line.
func (s *session) sendable() int {
	if s.candidate && s.lineStart >= 0 {
		return s.lineStart
	}
	return len(s.pend)
}

// sent drops n bytes from the front of pend after they were acknowledged.
func (s *session) sent(n int) {
	s.pend = s.pend[n:]
	if s.lineStart >= 0 {
		s.lineStart -= n
		if s.lineStart < 0 {
			s.lineStart = -1
		}
	}
}

// dropLine removes the current (marker) line from pend: the daemon does
// not know that marker, so it must not become content.
func (s *session) dropLine() {
	if s.lineStart >= 0 {
		s.pend = s.pend[:s.lineStart]
	}
}

// continued switches the session to the chained session that continues it.
func (s *session) continued(res protocol.BeginResult) {
	s.id, s.marker, s.nextSeq, s.truncated = res.SessionID, res.EndMarker, 1, false
	s.markers = append(s.markers, res.EndMarker)
}
