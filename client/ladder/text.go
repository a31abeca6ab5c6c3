package ladder

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rivo/uniseg"

	"github.com/orion-agent/orion/internal/termsafe"
)

// Width fills an 80-column terminal; a SHA-256 fits on its line.
const Width = 80

// safe is how the text ladder prints every string of the model: a model or
// a client chose most of them, and none may drive the terminal.
func safe(s string) string { return termsafe.String(s) }

// WriteText draws l in a box width columns wide, every string of the
// model made safe for a terminal.
func (l *Ladder) WriteText(w io.Writer, width int) error {
	inner := width - 4
	var out []string
	rule := func(left, right string) { out = append(out, left+strings.Repeat("─", width-2)+right) }
	row := func(text string) {
		for _, line := range wrap(text, inner, "    ") {
			out = append(out, "│ "+line+strings.Repeat(" ", max(0, inner-uniseg.StringWidth(line)))+" │")
		}
	}
	rule("┌", "┐")
	row("WRITE SESSION TRACE: " + safe(l.SessionID))
	rule("├", "┤")
	row("Started:  " + l.Started.UTC().Format("2006-01-02T15:04:05.000Z"))
	if l.Target != "" {
		row("Target:   " + safe(l.Target))
	}
	if l.Stage != "" {
		row("Stage:    " + safe(l.Stage))
	}
	row(fmt.Sprintf("Events:   %d over %s", l.Events, offset(l.Last.Sub(l.Started))))
	for i, r := range l.Rungs {
		rule("├", "┤")
		head := fmt.Sprintf("[%d] %s", i+1, safe(r.Title))
		if r.Requests > 1 {
			head = fmt.Sprintf("[%d] %s ×%d", i+1, safe(r.Title), r.Requests)
		}
		head += ": " + r.Status.Icon()
		at := "+" + offset(r.At.Sub(l.Started))
		pad := inner - uniseg.StringWidth(head) - uniseg.StringWidth(at)
		if pad < 1 {
			row(head)
			row(strings.Repeat(" ", max(0, inner-uniseg.StringWidth(at))) + at)
		} else {
			row(head + strings.Repeat(" ", pad) + at)
		}
		for _, d := range r.Details {
			row("    " + safe(d))
		}
	}
	rule("└", "┘")
	_, err := io.WriteString(w, strings.Join(out, "\n")+"\n")
	return err
}

// offset formats a duration since the first event compactly.
func offset(d time.Duration) string {
	switch {
	case d <= 0:
		return "0ms"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// wrap cuts s into lines of at most width columns, on grapheme
// boundaries, never inside a word where it can help it: at the last space
// when what follows fits on the next line, else after the last slash (a
// long path breaks between its names, never inside one), else where the
// line is full. Continuation lines start with indent plus the line's own
// leading spaces.
func wrap(s string, width int, indent string) []string {
	if uniseg.StringWidth(s) <= width {
		return []string{s}
	}
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	cont := lead + indent
	var lines []string
	var cur strings.Builder
	curW := 0
	prefix := len(lead) // bytes of cur that are indentation
	// Byte offsets in cur just after the last space and the last slash.
	lastSpace, lastSlash := -1, -1
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		gs, gw := g.Str(), g.Width()
		if curW+gw > width && cur.Len() > prefix {
			line, rest := cur.String(), ""
			fits := func(at int) bool {
				return at > prefix && at < len(line) && uniseg.StringWidth(cont+line[at:])+gw <= width
			}
			switch {
			case lastSpace == len(line):
				// The line ends with a space: a clean break here.
			case fits(lastSpace):
				line, rest = line[:lastSpace], line[lastSpace:]
			case fits(lastSlash):
				line, rest = line[:lastSlash], line[lastSlash:]
			}
			lines = append(lines, strings.TrimRight(line, " "))
			cur.Reset()
			cur.WriteString(cont + rest)
			curW = uniseg.StringWidth(cont + rest)
			prefix, lastSpace, lastSlash = len(cont), -1, -1
			if i := strings.LastIndexByte(rest, ' '); i >= 0 {
				lastSpace = len(cont) + i + 1
			}
			if i := strings.LastIndexByte(rest, '/'); i >= 0 {
				lastSlash = len(cont) + i + 1
			}
		}
		cur.WriteString(gs)
		curW += gw
		switch gs {
		case " ":
			lastSpace = cur.Len()
		case "/":
			lastSlash = cur.Len()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		lines = append(lines, cur.String())
	}
	return lines
}
