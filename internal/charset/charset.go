// Package charset says which encoding a text file is in, from the name a
// project gives it (.editorconfig's charset, .gitattributes'
// working-tree-encoding) or from its bytes, and converts it to and from
// the UTF-8 a model reads and writes, only where the round trip gives
// back the very same bytes.
//
// The rules, in order, for an existing file:
//
//   - A UTF-16 byte order mark decides: UTF-16LE or BE, the mark kept.
//     A UTF-8 mark means UTF-8, whatever a configuration says.
//   - A charset the project names is used when the daemon knows it (a
//     name it does not know is ignored, and the bytes decide).
//   - Otherwise the bytes decide: valid UTF-8 is UTF-8; text whose odd
//     (or even) bytes are nearly all zero is UTF-16LE (or BE) without a
//     mark; other text that is not UTF-8 and holds no NUL byte and no
//     well-formed multi-byte UTF-8 sequence is Windows-1252, or
//     ISO-8859-1 when it holds one of the five bytes Windows-1252 leaves
//     unassigned. A file that mixes UTF-8 with other bytes, or holds NUL
//     bytes, is left to be edited byte for byte.
//
// Whatever the choice, the file's bytes must decode and encode back to
// themselves, or it is refused with ErrUnsupportedEncoding: an edit must
// never garble what it did not touch.
package charset

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// ErrUnsupportedEncoding: a file's bytes do not survive a round trip
// through UTF-8 in its encoding, or a text has a character its encoding
// cannot hold.
var ErrUnsupportedEncoding = errors.New("unsupported encoding")

// Codec is one file's encoding other than UTF-8. A nil *Codec is UTF-8:
// its methods give the bytes back as they are.
type Codec struct {
	// Name is the encoding's usual name (ISO-8859-1, UTF-16LE, ...).
	Name string
	// From says how it was chosen: "byte order mark", the configuration
	// file that named it, or "detected".
	From string
	// BOM is the byte order mark the file starts with, kept on encoding.
	BOM []byte
	enc encoding.Encoding
}

var (
	utf16le = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	utf16be = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	bomLE   = []byte{0xff, 0xfe}
	bomBE   = []byte{0xfe, 0xff}
)

// Lookup resolves a charset name as .editorconfig (latin1, utf-16le, ...)
// or git's working-tree-encoding (ISO-8859-1, WINDOWS-1252, UTF-16LE,
// SHIFT-JIS, ...) spell it. utf8 is true for UTF-8 (with or without a
// mark), when c is nil; ok is false for a name the daemon does not know.
func Lookup(name string) (c *Codec, utf8, ok bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch strings.NewReplacer("_", "-").Replace(n) {
	case "":
		return nil, false, false
	case "utf-8", "utf8", "utf-8-bom":
		return nil, true, true
	case "latin1", "latin-1", "iso-8859-1", "iso8859-1", "l1":
		return &Codec{Name: "ISO-8859-1", enc: charmap.ISO8859_1}, false, true
	case "windows-1252", "cp1252", "win-1252":
		return &Codec{Name: "Windows-1252", enc: charmap.Windows1252}, false, true
	case "utf-16", "utf16":
		// git converts through the system's iconv, whose UTF-16 (written
		// with a byte order mark, read without one) is little-endian on
		// Linux (glibc) and big-endian elsewhere (libiconv on macOS).
		if runtime.GOOS == "linux" {
			return &Codec{Name: "UTF-16LE", enc: utf16le}, false, true
		}
		return &Codec{Name: "UTF-16BE", enc: utf16be}, false, true
	case "utf-16le", "utf16le":
		return &Codec{Name: "UTF-16LE", enc: utf16le}, false, true
	case "utf-16be", "utf16be":
		return &Codec{Name: "UTF-16BE", enc: utf16be}, false, true
	case "shift-jis", "sjis", "cp932", "windows-31j", "ms-kanji":
		return &Codec{Name: "Shift_JIS", enc: japanese.ShiftJIS}, false, true
	}
	e, err := ianaindex.IANA.Encoding(n)
	if err != nil || e == nil {
		return nil, false, false
	}
	canon, err := ianaindex.MIME.Name(e)
	if err != nil || canon == "" {
		if canon, err = ianaindex.IANA.Name(e); err != nil || canon == "" {
			canon = name
		}
	}
	if e == unicode.UTF8 {
		return nil, true, true
	}
	return &Codec{Name: canon, enc: e}, false, true
}

// ForFile returns the codec of an existing file's bytes b, given the
// charset the project names for it ("" for none) and where that was said
// (for messages). A nil codec means UTF-8, or bytes to edit as they are.
func ForFile(b []byte, named, from string) (*Codec, error) {
	c, _, err := DecodeFile(b, named, from)
	return c, err
}

// DecodeFile is ForFile that also returns the file's UTF-8 text (b
// itself for a nil codec), decoded once.
func DecodeFile(b []byte, named, from string) (*Codec, []byte, error) {
	var c *Codec
	switch {
	case bytes.HasPrefix(b, []byte("\xef\xbb\xbf")):
		return nil, b, nil
	case bytes.HasPrefix(b, bomLE):
		c = &Codec{Name: "UTF-16LE", From: "byte order mark", BOM: bomLE, enc: utf16le}
	case bytes.HasPrefix(b, bomBE):
		c = &Codec{Name: "UTF-16BE", From: "byte order mark", BOM: bomBE, enc: utf16be}
	default:
		if nc, isUTF8, ok := Lookup(named); ok {
			if isUTF8 {
				return nil, b, nil
			}
			c = nc
			c.From = from
		} else {
			c = detect(b)
		}
	}
	if c == nil {
		return nil, b, nil
	}
	text, err := c.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	return c, text, nil
}

// detect guesses the encoding of bytes with no mark and no name.
func detect(b []byte) *Codec {
	if c := detectUTF16(b); c != nil {
		return c
	}
	if utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return nil
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && n > 1 {
			// UTF-8 mixed with other bytes: no single charset.
			return nil
		}
		i += n
	}
	for _, u := range []byte{0x81, 0x8d, 0x8f, 0x90, 0x9d} {
		if bytes.IndexByte(b, u) >= 0 {
			return &Codec{Name: "ISO-8859-1", From: "detected", enc: charmap.ISO8859_1}
		}
	}
	return &Codec{Name: "Windows-1252", From: "detected", enc: charmap.Windows1252}
}

// detectUTF16 finds UTF-16 without a mark by its zero bytes: text mostly
// in the first 256 code points has a zero in every other byte.
func detectUTF16(b []byte) *Codec {
	if len(b) < 4 || len(b)%2 != 0 {
		return nil
	}
	var even, odd int
	for i := 0; i < len(b); i += 2 {
		if b[i] == 0 {
			even++
		}
		if b[i+1] == 0 {
			odd++
		}
	}
	half := len(b) / 2
	switch {
	case odd*10 >= half*9 && even*10 < half:
		return &Codec{Name: "UTF-16LE", From: "detected", enc: utf16le}
	case even*10 >= half*9 && odd*10 < half:
		return &Codec{Name: "UTF-16BE", From: "detected", enc: utf16be}
	}
	return nil
}

// Decode returns b as UTF-8 text, without its byte order mark. It fails
// with ErrUnsupportedEncoding unless encoding that text again gives b.
func (c *Codec) Decode(b []byte) ([]byte, error) {
	if c == nil {
		return b, nil
	}
	body := b
	if len(c.BOM) > 0 {
		body = bytes.TrimPrefix(b, c.BOM)
	}
	text, err := c.enc.NewDecoder().Bytes(body)
	if err == nil {
		var back []byte
		back, err = c.enc.NewEncoder().Bytes(text)
		if err == nil && !bytes.Equal(back, body) {
			err = errors.New("its bytes do not survive decoding and encoding again")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the file is in %s%s, but %v; edit it with a tool that keeps its bytes", ErrUnsupportedEncoding, c.Name, c.from(), err)
	}
	return text, nil
}

// Encode writes UTF-8 text back in the codec's encoding, with the file's
// byte order mark. A character the encoding cannot hold fails with
// ErrUnsupportedEncoding, naming it and its line.
func (c *Codec) Encode(text []byte) ([]byte, error) {
	if c == nil {
		return text, nil
	}
	body, err := c.enc.NewEncoder().Bytes(text)
	if err != nil {
		return nil, fmt.Errorf("%w: the text cannot be written in %s%s: %s", ErrUnsupportedEncoding, c.Name, c.from(), c.firstUnencodable(text))
	}
	if len(c.BOM) > 0 {
		body = append(append([]byte(nil), c.BOM...), body...)
	}
	return body, nil
}

// firstUnencodable names the first character of text the codec cannot
// hold, for a message a model can act on.
func (c *Codec) firstUnencodable(text []byte) string {
	line := 1
	enc := c.enc.NewEncoder()
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Sprintf("line %d holds bytes that are not UTF-8", line)
		}
		if _, err := enc.Bytes(text[i : i+n]); err != nil {
			return fmt.Sprintf("line %d has %q (U+%04X), which %s has no byte for; write it another way (an escape, or plain ASCII)", line, string(r), r, c.Name)
		}
		if r == '\n' {
			line++
		}
		i += n
	}
	return "a character it has no byte for"
}

func (c *Codec) from() string {
	if d := c.Source(); d != "" {
		return " (" + d + ")"
	}
	return ""
}

// Source says how the codec was chosen, for messages: "its byte order
// mark", "detected from its bytes", "as .editorconfig says".
func (c *Codec) Source() string {
	switch c.From {
	case "":
		return ""
	case "byte order mark":
		return "by its byte order mark"
	case "detected":
		return "detected from its bytes"
	}
	return "as " + c.From + " says"
}

// String names the codec for messages: "UTF-8" for nil.
func (c *Codec) String() string {
	if c == nil {
		return "UTF-8"
	}
	return c.Name
}
