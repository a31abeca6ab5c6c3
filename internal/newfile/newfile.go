// Package newfile finds what a project says a new file should look like
// (line endings, final newline, charset) in its .editorconfig and
// .gitattributes files, and gives a model's text that form.
package newfile

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	editorconfig "github.com/editorconfig/editorconfig-core-go/v2"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// MaxConfigBytes bounds each .editorconfig and .gitattributes read; a
// larger one is ignored.
const MaxConfigBytes = 64 << 10

// ErrUnsupportedEncoding: the text cannot be written in the charset the
// project names (a character Latin-1 lacks).
var ErrUnsupportedEncoding = errors.New("unsupported encoding")

// Style is what the project says about one new file. Zero values say
// nothing.
type Style struct {
	EOL          string // "\n" or "\r\n"
	FinalNewline *bool
	Charset      string // editorconfig's names: utf-8, utf-8-bom, latin1, utf-16le, utf-16be
	Binary       bool   // .gitattributes says -text or binary: no conversion
	// Sources names the files that said so, for the repair messages.
	Sources []string
}

// ReadFunc reads one configuration file, at most MaxConfigBytes of it;
// ok is false when it is missing or unreadable.
type ReadFunc func(path string) (data []byte, ok bool)

// Lookup reads the .editorconfig and .gitattributes files that apply to
// target (a slash path), in its directory and each one above it up to
// top (an ancestor directory of target, or "/" ).
func Lookup(target, top string, read ReadFunc) Style {
	var dirs []string // nearest first
	for d := path.Dir(target); ; d = path.Dir(d) {
		dirs = append(dirs, d)
		if d == top || d == "/" || d == "." || len(dirs) > 64 {
			break
		}
	}
	var s Style
	// .editorconfig: the nearest file wins, and a root=true file ends the
	// search.
	var ecs []string
	var parsed []*editorconfig.Editorconfig
	for _, d := range dirs {
		p := path.Join(d, ".editorconfig")
		data, ok := read(p)
		if !ok {
			continue
		}
		e, err := editorconfig.Parse(bytes.NewReader(data))
		if err != nil {
			continue
		}
		ecs, parsed = append(ecs, d), append(parsed, e)
		if e.Root {
			break
		}
	}
	for i := len(parsed) - 1; i >= 0; i-- {
		rel := strings.TrimPrefix(strings.TrimPrefix(target, ecs[i]), "/")
		def, err := parsed[i].GetDefinitionForFilename(rel)
		if err != nil || def == nil {
			continue
		}
		said := false
		switch strings.ToLower(def.EndOfLine) {
		case "lf":
			s.EOL, said = "\n", true
		case "crlf":
			s.EOL, said = "\r\n", true
		}
		if def.InsertFinalNewline != nil {
			v := *def.InsertFinalNewline
			s.FinalNewline, said = &v, true
		}
		if c := strings.ToLower(def.Charset); c != "" {
			s.Charset, said = c, true
		}
		if said {
			s.Sources = append(s.Sources, path.Join(ecs[i], ".editorconfig"))
		}
	}
	// .gitattributes: what git checks the file out as wins over the
	// editor's settings; deeper files and later lines win.
	for i := len(dirs) - 1; i >= 0; i-- {
		p := path.Join(dirs[i], ".gitattributes")
		data, ok := read(p)
		if !ok {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(target, dirs[i]), "/")
		if gitAttributes(data, rel, &s) {
			s.Sources = append(s.Sources, p)
		}
	}
	return s
}

// gitAttributes applies the lines of one .gitattributes whose pattern
// matches rel, and reports whether any said something.
func gitAttributes(data []byte, rel string, s *Style) bool {
	said := false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || !matchAttr(f[0], rel) {
			continue
		}
		for _, a := range f[1:] {
			switch a {
			case "eol=crlf":
				s.EOL, s.Binary, said = "\r\n", false, true
			case "eol=lf":
				s.EOL, s.Binary, said = "\n", false, true
			case "-text", "binary":
				s.Binary, said = true, true
			case "text", "text=auto":
				s.Binary = false
			}
		}
	}
	return said
}

// matchAttr matches a .gitattributes pattern as git does for the common
// forms: a pattern without a slash matches the name in any directory,
// one with a slash the path from the file's directory.
func matchAttr(pattern, rel string) bool {
	if !strings.Contains(strings.TrimSuffix(pattern, "/"), "/") {
		ok, _ := path.Match(pattern, path.Base(rel))
		return ok
	}
	pattern = strings.TrimPrefix(pattern, "/")
	if strings.HasPrefix(pattern, "**/") {
		for p := rel; ; {
			if ok, _ := path.Match(pattern[3:], p); ok {
				return true
			}
			i := strings.IndexByte(p, '/')
			if i < 0 {
				return false
			}
			p = p[i+1:]
		}
	}
	ok, _ := path.Match(pattern, rel)
	return ok
}

// Change is one change Apply made, for the session's repairs.
type Change struct {
	Kind, Message string
}

// Apply gives UTF-8 text the style's form.
func Apply(text []byte, s Style) ([]byte, []Change, error) {
	if s.Binary {
		return text, nil, nil
	}
	var changes []Change
	from := strings.Join(s.Sources, ", ")
	out := text
	if s.EOL != "" && len(out) > 0 {
		lf := bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))
		conv := lf
		if s.EOL == "\r\n" {
			conv = bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n"))
		}
		if !bytes.Equal(conv, out) {
			out = conv
			changes = append(changes, Change{"line_endings_matched", fmt.Sprintf("line endings written as %s, as %s says", eolName(s.EOL), from)})
		}
	}
	if s.FinalNewline != nil && len(out) > 0 {
		eol := s.EOL
		if eol == "" {
			eol = "\n"
			if bytes.Contains(out, []byte("\r\n")) {
				eol = "\r\n"
			}
		}
		has := bytes.HasSuffix(out, []byte("\n"))
		switch {
		case *s.FinalNewline && !has:
			out = append(append([]byte(nil), out...), eol...)
			changes = append(changes, Change{"final_newline_matched", "final newline added, as " + from + " says"})
		case !*s.FinalNewline && has:
			out = bytes.TrimSuffix(bytes.TrimSuffix(out, []byte("\n")), []byte("\r"))
			changes = append(changes, Change{"final_newline_matched", "final newline removed, as " + from + " says"})
		}
	}
	var enc encoding.Encoding
	switch s.Charset {
	case "utf-8-bom":
		if !bytes.HasPrefix(out, []byte("\ufeff")) {
			out = append([]byte("\ufeff"), out...)
			changes = append(changes, Change{"bom_matched", "UTF-8 byte order mark added, as " + from + " says"})
		}
		return out, changes, nil
	case "latin1":
		enc = charmap.ISO8859_1
	case "utf-16le":
		enc = unicode.UTF16(unicode.LittleEndian, unicode.UseBOM)
	case "utf-16be":
		enc = unicode.UTF16(unicode.BigEndian, unicode.UseBOM)
	default:
		return out, changes, nil
	}
	b, err := enc.NewEncoder().Bytes(bytes.TrimPrefix(out, []byte("\ufeff")))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s says %s, and the text has a character %s cannot hold: %v", ErrUnsupportedEncoding, from, s.Charset, s.Charset, err)
	}
	changes = append(changes, Change{"charset_matched", "written as " + s.Charset + ", as " + from + " says"})
	return b, changes, nil
}

func eolName(eol string) string {
	if eol == "\r\n" {
		return "CRLF"
	}
	return "LF"
}
