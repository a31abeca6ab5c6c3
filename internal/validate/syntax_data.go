package validate

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/charmap"

	toml "github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// checkYAML parses every document of a YAML stream.
func checkYAML(src []byte) []problem {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return []problem{yamlProblem(src, err)}
		}
	}
}

// yamlProblem turns a "yaml: line N: message" error into a problem. The
// library reports a line only (the line where the construct it was parsing
// began), so the column is that line's first non-blank character.
func yamlProblem(src []byte, err error) problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	ls := newLines(src)
	last := ls.lastNonBlank()
	p := problem{off: -1, line: line, msg: yamlMessage(msg)}
	switch {
	case line == 0:
		// Errors at the very end ("found unexpected end of stream") come
		// without a line.
		p.off = contentEnd(src)
	case line <= len(ls.starts):
		text := ls.text(line)
		p.col = len(text) - len(strings.TrimLeft(text, " \t")) + 1
	}
	// The line is where the construct began, so "on the last line" only
	// means "cut" for the errors a cut produces: a key without its ':', an
	// alias cut short, an unclosed flow collection or quoted scalar.
	cutMsg := strings.Contains(msg, "could not find expected ':'") || strings.Contains(msg, "unknown anchor") ||
		strings.Contains(msg, "did not find expected")
	p.eof = strings.Contains(msg, "end of stream") ||
		line >= last && cutMsg ||
		strings.HasPrefix(msg, "did not find expected ',' or") && flowOpenAtEnd(src, ls.offset(line, 1))
	return p
}

// yamlMessage adds what a model should do to the YAML parser's terse
// messages.
func yamlMessage(msg string) string {
	switch {
	case strings.Contains(msg, "could not find expected ':'"):
		return msg + " (a mapping key must be followed by ': ')"
	case strings.Contains(msg, "did not find expected key"):
		return msg + " (check the indentation: this line does not line up with the keys of its mapping)"
	case strings.Contains(msg, "mapping values are not allowed in this context"):
		return msg + " (quote a value that contains ': ', or fix the indentation)"
	case strings.Contains(msg, "found character that cannot start any token"):
		return msg + " (YAML indentation must use spaces, not tabs; quote values that start with special characters)"
	}
	return msg
}

// flowOpenAtEnd reports whether a YAML flow collection ([ ] or { }) that
// starts at or after off is still open at the end of src. Quoted scalars
// and comments are skipped.
func flowOpenAtEnd(src []byte, off int) bool {
	depth := 0
	for i := off; i < len(src); i++ {
		switch src[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case '"', '\'':
			q := src[i]
			for i++; i < len(src) && src[i] != q; i++ {
				if q == '"' && src[i] == '\\' {
					i++
				}
			}
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		}
	}
	return depth > 0
}

// checkTOML parses src as a TOML document.
func checkTOML(src []byte) []problem {
	var v map[string]any
	err := toml.Unmarshal(src, &v)
	if err == nil {
		return nil
	}
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return []problem{{off: 0, msg: strings.TrimPrefix(err.Error(), "toml: ")}}
	}
	row, col := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	if k := de.Key(); len(k) > 0 && !strings.Contains(msg, strings.Join(k, ".")) {
		msg += " (key " + strings.Join(k, ".") + ")"
	}
	ls := newLines(src)
	p := problem{off: ls.offset(row, col), msg: msg}
	// A token cut short on the last line reads as "expected ...".
	p.eof = p.off >= contentEnd(src) || row >= ls.lastNonBlank() && strings.HasPrefix(msg, "expected") ||
		strings.Contains(msg, "incomplete") || strings.Contains(msg, "unterminated") || strings.Contains(msg, "EOF")
	return p.one()
}

// one wraps a single problem in a slice.
func (p problem) one() []problem { return []problem{p} }

// checkXML parses src as a well-formed XML document: one root element,
// every element closed, entities known (the predefined ones, HTML's, and
// those the document's DOCTYPE declares).
func checkXML(src []byte) []problem {
	d := xml.NewDecoder(bytes.NewReader(src))
	d.Strict = true
	d.Entity = make(map[string]string, len(xml.HTMLEntity))
	for k, v := range xml.HTMLEntity {
		d.Entity[k] = v
	}
	d.CharsetReader = charsetReader
	roots, depth := 0, 0
	for {
		start := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			if roots == 0 {
				return problem{off: contentEnd(src), msg: "no root element: an XML document needs exactly one element, such as <root>...</root>", eof: true}.one()
			}
			return nil
		}
		if err != nil {
			return xmlProblem(src, d, start, err).one()
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if roots > 1 {
					return problem{off: skipSpace(src, int(start)), msg: fmt.Sprintf("a second root element <%s>: an XML document has exactly one root element; wrap both in a common parent", t.Name.Local)}.one()
				}
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return problem{off: skipSpace(src, int(start)), msg: "text outside the root element: expected only comments, processing instructions or whitespace there"}.one()
			}
		case xml.Directive:
			for name, value := range dtdEntities(t) {
				d.Entity[name] = value
			}
		}
	}
}

// xmlProblem locates an encoding/xml error. SyntaxError carries a line
// only; the decoder's offsets give the token that failed.
func xmlProblem(src []byte, d *xml.Decoder, start int64, err error) problem {
	var se *xml.SyntaxError
	if !errors.As(err, &se) {
		return problem{off: skipSpace(src, int(start)), msg: strings.TrimPrefix(err.Error(), "xml: ")}
	}
	if se.Msg == "unexpected EOF" {
		return problem{off: len(src), msg: "unexpected end of input: an element, tag, comment or attribute value is not closed", eof: true}
	}
	ls := newLines(src)
	off := skipSpace(src, int(start))
	if ent, ok := strings.CutPrefix(se.Msg, "invalid character entity "); ok {
		// Point at the entity itself, not at the start of the text.
		if i := bytes.Index(src[off:], []byte(ent)); i >= 0 {
			off += i
		}
	}
	if l, _ := ls.position(off); l != se.Line {
		off = int(d.InputOffset())
		if l, _ := ls.position(off); l != se.Line {
			off = ls.offset(se.Line, 1)
		}
	}
	return problem{off: off, msg: xmlMessage(se.Msg)}
}

// xmlMessage adds what was expected to encoding/xml's terse messages.
func xmlMessage(msg string) string {
	switch {
	case strings.HasPrefix(msg, "invalid character entity"):
		return msg + " (escape a literal & as &amp;, or declare the entity)"
	case strings.Contains(msg, "closed by"):
		return msg + " (every start tag needs the matching end tag, innermost first)"
	case strings.HasPrefix(msg, "unquoted or missing attribute value"):
		return msg + " (attribute values must be quoted: name=\"value\")"
	}
	return msg
}

// skipSpace moves off past whitespace, to the first byte of a token.
func skipSpace(src []byte, off int) int {
	for off < len(src) && (src[off] == ' ' || src[off] == '\t' || src[off] == '\n' || src[off] == '\r') {
		off++
	}
	return off
}

// dtdEntities returns the general entities an internal DTD subset declares
// (<!ENTITY name "value">), which encoding/xml does not read itself.
// Parameter entities and external entities are not needed to check syntax;
// external ones map to an empty string so references to them are accepted.
func dtdEntities(dir xml.Directive) map[string]string {
	s := string(dir)
	if !strings.HasPrefix(s, "DOCTYPE") {
		return nil
	}
	m := make(map[string]string)
	for {
		i := strings.Index(s, "<!ENTITY")
		if i < 0 {
			return m
		}
		s = s[i+len("<!ENTITY"):]
		fields := strings.Fields(s)
		if len(fields) < 2 || fields[0] == "%" {
			continue
		}
		name, rest := fields[0], strings.TrimSpace(s[strings.Index(s, fields[0])+len(fields[0]):])
		value := ""
		if len(rest) > 0 && (rest[0] == '"' || rest[0] == '\'') {
			if j := strings.IndexByte(rest[1:], rest[0]); j >= 0 {
				value = rest[1 : 1+j]
			}
		}
		m[name] = value
	}
}

// charsetReader lets documents declared in Latin-1 or Windows-1252 be
// checked, decoded by golang.org/x/text's tables (Windows-1252 has
// printable characters at 0x80-0x9F, such as € and curly quotes, where
// Latin-1 has C1 controls). An ASCII declaration is read as Latin-1, so
// that a stray byte above 0x7F is not a syntax error. Other declared
// charsets are read as they are, which is enough to check structure as
// long as they are ASCII-compatible.
func charsetReader(charset string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "windows-1252", "cp1252":
		return charmap.Windows1252.NewDecoder().Reader(in), nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "us-ascii", "ascii":
		return charmap.ISO8859_1.NewDecoder().Reader(in), nil
	}
	return in, nil
}
