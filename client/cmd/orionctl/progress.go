package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/orion-agent/orion/internal/textfmt"
)

// progress draws one line on a terminal: the bytes sent, of how many when
// the size is known, and the rate once a full second has passed (a rate
// over the first milliseconds says nothing but the size of a buffer).
type progress struct {
	w     io.Writer
	total int64 // -1: unknown (a pipe)
	now   func() time.Time
	start time.Time
	last  time.Time // last drawn
	width int       // of the last line drawn, to blank it
}

// progressEvery is how often the line is redrawn at most.
const progressEvery = 100 * time.Millisecond

func newProgressLine(w io.Writer, total int64, now func() time.Time) *progress {
	return &progress{w: w, total: total, now: now, start: now()}
}

// line is the text for sent bytes at time t.
func (p *progress) line(sent int64, t time.Time) string {
	var b strings.Builder
	b.WriteString("writing: ")
	b.WriteString(textfmt.IBytes(sent))
	if p.total >= 0 {
		pct := 100
		if p.total > 0 {
			pct = int(sent * 100 / p.total)
		}
		fmt.Fprintf(&b, " of %s (%d%%)", textfmt.IBytes(p.total), pct)
	}
	b.WriteString(" sent")
	if elapsed := t.Sub(p.start); elapsed >= time.Second {
		fmt.Fprintf(&b, ", %s/s", textfmt.IBytes(int64(float64(sent)/elapsed.Seconds())))
	}
	return b.String()
}

// Set draws the line for sent bytes, at most every progressEvery.
func (p *progress) Set(sent int64) {
	t := p.now()
	if !p.last.IsZero() && t.Sub(p.last) < progressEvery {
		return
	}
	p.last = t
	p.draw(p.line(sent, t))
}

// Finish blanks the line, so that the summary follows on a clean one.
func (p *progress) Finish() {
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	}
}

func (p *progress) draw(s string) {
	pad := ""
	if n := p.width - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", s, pad)
	p.width = len(s)
}
