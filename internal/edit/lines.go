package edit

import (
	"bytes"
	"strings"
)

// doc is a file as lines. Edits splice lines; rendering puts back each
// kept line's own ending, so a CRLF file (or a mixed one) stays as it was
// outside the edited lines.
type doc struct {
	lines []string // text of each line, without its ending
	eols  []string // each line's ending; "" means the dominant one
	eol   string   // dominant ending: "\r\n" or "\n"
	// finalEOL: the last line ends with a newline. An empty file counts as
	// ending with one, so text added to it ends with a newline.
	finalEOL bool
	// bom is the file's UTF-8 byte order mark, kept apart from the first
	// line so that an edit of that line (which the model writes without
	// it) matches, and written back in front.
	bom string
}

const utf8BOM = "\xef\xbb\xbf"

func parseDoc(b []byte) *doc {
	d := &doc{eol: "\n", finalEOL: true}
	if bytes.HasPrefix(b, []byte(utf8BOM)) {
		d.bom, b = utf8BOM, b[len(utf8BOM):]
	}
	crlf, lf := 0, 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			d.lines = append(d.lines, string(b))
			d.eols = append(d.eols, "")
			d.finalEOL = false
			break
		}
		line, eol := b[:i], "\n"
		if i > 0 && b[i-1] == '\r' {
			line, eol = b[:i-1], "\r\n"
			crlf++
		} else {
			lf++
		}
		d.lines = append(d.lines, string(line))
		d.eols = append(d.eols, eol)
		b = b[i+1:]
	}
	if crlf > lf {
		d.eol = "\r\n"
	}
	return d
}

func (d *doc) render() []byte {
	var b bytes.Buffer
	b.WriteString(d.bom)
	for i, l := range d.lines {
		b.WriteString(l)
		if i == len(d.lines)-1 && !d.finalEOL {
			break
		}
		if d.eols[i] != "" {
			b.WriteString(d.eols[i])
		} else {
			b.WriteString(d.eol)
		}
	}
	return b.Bytes()
}

// splice replaces lines [i, j) with repl, which take the dominant ending.
func (d *doc) splice(i, j int, repl []string) {
	lines := make([]string, 0, len(d.lines)-(j-i)+len(repl))
	lines = append(append(append(lines, d.lines[:i]...), repl...), d.lines[j:]...)
	eols := make([]string, 0, len(lines))
	eols = append(eols, d.eols[:i]...)
	// A replacing line takes the ending of the line it replaces, so that
	// in a file of mixed endings an edited line keeps its own; added lines
	// take the dominant one.
	for k := range repl {
		if k < j-i {
			eols = append(eols, d.eols[i+k])
		} else {
			eols = append(eols, "")
		}
	}
	eols = append(eols, d.eols[j:]...)
	// A line that was last without an ending and is now followed by others
	// needs one: its "" already means the dominant ending, and whichever
	// line is last, render asks finalEOL.
	// Deleting the last lines of a file without a final newline keeps the
	// newline before them (as Cline does): it ended the line now last,
	// and dropping it would change a line the edit did not touch.
	if j == len(d.lines) && j > i && i > 0 && len(repl) == 0 {
		d.finalEOL = true
	}
	d.lines, d.eols = lines, eols
}

// text is the file with "\n" between lines, for byte-level matching that
// must not care about CRLF.
func (d *doc) text() string {
	s := strings.Join(d.lines, "\n")
	if len(d.lines) > 0 && d.finalEOL {
		s += "\n"
	}
	return s
}

// setText replaces the file by s (as [doc.text] gives it), keeping the
// endings of the lines before and after the changed ones.
func (d *doc) setText(s string) {
	lines, final := splitText(s)
	p := 0
	for p < len(lines) && p < len(d.lines) && lines[p] == d.lines[p] {
		p++
	}
	q := 0
	for q < len(lines)-p && q < len(d.lines)-p && lines[len(lines)-1-q] == d.lines[len(d.lines)-1-q] {
		q++
	}
	d.splice(p, len(d.lines)-q, lines[p:len(lines)-q])
	d.finalEOL = final || len(lines) == 0
}

// splitText splits edit text into lines, dropping "\r" before "\n" so that
// edits written with either ending apply to files with either. final
// reports whether the text ended with a newline.
func splitText(s string) (lines []string, final bool) {
	if s == "" {
		return nil, false
	}
	final = strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	lines = strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, final
}

// editLines splits every line of an edit, keeping a last line without a
// newline; the edit's own structure decides what each line means.
func editLines(content []byte) []string {
	lines, _ := splitText(string(content))
	return lines
}

// lineEdit replaces lines [start, end) of the original file with repl.
type lineEdit struct {
	start, end int
	repl       []string
}

// applyEdits makes non-overlapping edits, sorted by start, all computed
// against the same original lines.
func (d *doc) applyEdits(edits []lineEdit) {
	var lines, eols []string
	cur := 0
	for _, e := range edits {
		lines = append(lines, d.lines[cur:e.start]...)
		eols = append(eols, d.eols[cur:e.start]...)
		lines = append(lines, e.repl...)
		for k := range e.repl {
			if k < e.end-e.start {
				eols = append(eols, d.eols[e.start+k]) // as in splice
			} else {
				eols = append(eols, "")
			}
		}
		cur = e.end
	}
	d.lines = append(lines, d.lines[cur:]...)
	d.eols = append(eols, d.eols[cur:]...)
}
