// Package newfile finds what a project says a new file should look like
// (line endings, final newline, charset) in its .editorconfig and
// .gitattributes files, and gives a model's text that form.
package newfile

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	editorconfig "github.com/editorconfig/editorconfig-core-go/v2"

	"github.com/orion-agent/orion/internal/charset"
)

// MaxConfigBytes bounds each .editorconfig and .gitattributes read; a
// larger one is ignored.
const MaxConfigBytes = 64 << 10

// ErrUnsupportedEncoding: the text cannot be written in the charset the
// project names (a character Latin-1 lacks).
var ErrUnsupportedEncoding = charset.ErrUnsupportedEncoding

// Style is what the project says about one new file. Zero values say
// nothing.
type Style struct {
	EOL          string // "\n" or "\r\n"
	FinalNewline *bool
	Charset      string // editorconfig's names: utf-8, utf-8-bom, latin1, utf-16le, utf-16be
	// CharsetFrom is the .editorconfig that named Charset.
	CharsetFrom string
	// WorkingTreeEncoding is the encoding .gitattributes says git checks
	// the file out in (git's names: ISO-8859-1, UTF-16LE, ...); it wins
	// over Charset, since git converts the file to it.
	WorkingTreeEncoding, EncodingFrom string
	Binary                            bool // .gitattributes says -text or binary: no conversion
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
			s.Charset, s.CharsetFrom, said = c, path.Join(ecs[i], ".editorconfig"), true
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
		if gitAttributes(data, rel, p, &s) {
			s.Sources = append(s.Sources, p)
		}
	}
	return s
}

// gitAttributes applies the lines of one .gitattributes whose pattern
// matches rel, and reports whether any said something.
func gitAttributes(data []byte, rel, from string, s *Style) bool {
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
			case "-working-tree-encoding", "!working-tree-encoding":
				s.WorkingTreeEncoding, s.EncodingFrom = "", ""
			default:
				if v, ok := strings.CutPrefix(a, "working-tree-encoding="); ok && v != "" {
					s.WorkingTreeEncoding, s.EncodingFrom, said = v, from, true
				}
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

// FileCharset is the charset the project names for the file, and the
// file that says so: .gitattributes' working-tree-encoding, else
// .editorconfig's charset; "" when neither says.
func (s Style) FileCharset() (name, from string) {
	if s.WorkingTreeEncoding != "" {
		return s.WorkingTreeEncoding, s.EncodingFrom
	}
	return s.Charset, s.CharsetFrom
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
	name, from := s.FileCharset()
	if s.WorkingTreeEncoding == "" && s.Charset == "utf-8-bom" {
		if !bytes.HasPrefix(out, []byte("\ufeff")) {
			out = append([]byte("\ufeff"), out...)
			changes = append(changes, Change{"bom_matched", "UTF-8 byte order mark added, as " + from + " says"})
		}
		return out, changes, nil
	}
	// git checks UTF-16 out with a byte order mark (in the byte order
	// of the system's iconv), UTF-16LE and UTF-16BE without one.
	gitUTF16 := s.WorkingTreeEncoding != "" && (strings.EqualFold(name, "UTF-16") || strings.EqualFold(name, "UTF16"))
	c, _, ok := charset.Lookup(name)
	if !ok || c == nil {
		return out, changes, nil
	}
	c.From = from
	if gitUTF16 || s.WorkingTreeEncoding == "" && strings.HasPrefix(name, "utf-16") {
		// Editors write .editorconfig's utf-16le and utf-16be with a byte
		// order mark.
		if strings.HasSuffix(c.Name, "LE") {
			c.BOM = []byte{0xff, 0xfe}
		} else {
			c.BOM = []byte{0xfe, 0xff}
		}
	}
	b, err := c.Encode(bytes.TrimPrefix(out, []byte("\ufeff")))
	if err != nil {
		return nil, nil, err
	}
	changes = append(changes, Change{"charset_matched", "written as " + c.Name + ", as " + from + " says"})
	return b, changes, nil
}

func eolName(eol string) string {
	if eol == "\r\n" {
		return "CRLF"
	}
	return "LF"
}
