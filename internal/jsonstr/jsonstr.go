// Package jsonstr reads and writes JSON strings in one pass, for the
// strings that carry a file's content (a chunk of up to a few MiB), where a
// general decoder's separate passes (validate, then unquote, then convert
// to a Go string) cost more than journaling the bytes.
//
// Unquote takes exactly the strings a strict decoder takes (encoding/json/v2
// with its defaults): valid UTF-8, no control character unescaped, only
// JSON's escapes, and a \u escape of a UTF-16 surrogate only as half of a
// pair. It does not say why a string is refused: a caller falls back to its
// general decoder for that, so that errors keep their codes and messages.
//
// Scan is the one checking pass of a reader that must find where a string
// ends anyway (the daemon's frame reader): it tells what Unquote would make
// of the string, and Unescape then writes its text without a second check.
package jsonstr

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// SWAR masks: eight bytes tested at once.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special marks, in the high bit of each byte, the bytes of the eight in x
// (little-endian) that need a look of their own: at or over 0x80 (UTF-8 to
// check), under 0x20 (a control character, invalid in a JSON string), '"'
// and '\\'. A byte above a marked one may be marked wrongly (a borrow), but
// the lowest mark is always right, which is all the callers use.
func special(x uint64) uint64 {
	return x&highs | syntax(x)
}

// syntax is special without the bytes over 0x7F: it marks control
// characters, '"' and '\\' (no byte over 0x7F is ever marked).
func syntax(x uint64) uint64 {
	ctl := (x - 0x20*ones) &^ x
	quote := x ^ ('"' * ones)
	quote = (quote - ones) &^ quote
	bslash := x ^ ('\\' * ones)
	bslash = (bslash - ones) &^ bslash
	return (ctl | quote | bslash) & highs
}

// Unquote reads the JSON string at the start of src (its opening quote
// first) and appends its text to dst. It returns the extended dst, the
// number of bytes of src the string took (quotes included) and true; or dst
// as it was, 0 and false when src does not start with a string a strict
// decoder takes.
//
// dst may be src[:0], the text written over the string's own JSON (the
// daemon unquotes a chunk so): Unquote never writes a byte of dst before it
// has read the bytes of src at that place. On false, src has been
// overwritten up to where the string went wrong.
func Unquote(dst, src []byte) ([]byte, int, bool) {
	if len(src) == 0 || src[0] != '"' {
		return dst, 0, false
	}
	orig := len(dst)
	i, start := 1, 1
	for {
	words:
		for i+8 <= len(src) {
			// As in Skip: a one-letter escape, and a byte marked by a
			// borrow, are dealt with within their word.
			m := special(binary.LittleEndian.Uint64(src[i:]))
			for m != 0 {
				k := bits.TrailingZeros64(m) / 8
				c := src[i+k]
				if c == '\\' && k < 7 {
					if e := shortEscapes[src[i+k+1]]; e != 0 {
						dst = append(dst, src[start:i+k]...)
						dst = append(dst, e)
						start = i + k + 2
						m &^= 0x8080 << (8 * k)
						continue
					}
				}
				if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
					m &^= 0x80 << (8 * k)
					continue
				}
				i += k
				break words
			}
			i += 8
		}
		if i >= len(src) {
			return dst[:orig], 0, false
		}
		switch c := src[i]; {
		case c == '"':
			return append(dst, src[start:i]...), i + 1, true
		case c == '\\':
			dst = append(dst, src[start:i]...)
			if i+1 < len(src) {
				if e := shortEscapes[src[i+1]]; e != 0 {
					dst = append(dst, e)
					i += 2
					start = i
					continue
				}
			}
			n, ok := 0, false
			if dst, n, ok = unescape(dst, src[i:]); !ok {
				return dst[:orig], 0, false
			}
			i += n
			start = i
		case c < 0x20:
			return dst[:orig], 0, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return dst[:orig], 0, false
			}
			i += size
		}
	}
}

// shortEscapes maps the letter after a backslash to the character it
// stands for, for JSON's one-letter escapes (0: not one of them).
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescape appends the character of the escape at the start of src and
// returns how many bytes of src it took.
func unescape(dst, src []byte) ([]byte, int, bool) {
	if len(src) < 2 {
		return dst, 0, false
	}
	switch src[1] {
	case '"', '\\', '/':
		return append(dst, src[1]), 2, true
	case 'b':
		return append(dst, '\b'), 2, true
	case 'f':
		return append(dst, '\f'), 2, true
	case 'n':
		return append(dst, '\n'), 2, true
	case 'r':
		return append(dst, '\r'), 2, true
	case 't':
		return append(dst, '\t'), 2, true
	case 'u':
	default:
		return dst, 0, false
	}
	r, ok := hex4(src, 2)
	switch {
	case !ok:
		return dst, 0, false
	case r >= 0xD800 && r < 0xDC00:
		// A high surrogate: its low half must follow as \uDC00-\uDFFF.
		if len(src) < 12 || src[6] != '\\' || src[7] != 'u' {
			return dst, 0, false
		}
		lo, ok := hex4(src, 8)
		if !ok || lo < 0xDC00 || lo >= 0xE000 {
			return dst, 0, false
		}
		return utf8.AppendRune(dst, 0x10000+(r-0xD800)<<10+(lo-0xDC00)), 12, true
	case r >= 0xDC00 && r < 0xE000:
		return dst, 0, false
	}
	return utf8.AppendRune(dst, r), 6, true
}

// hex4 decodes the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Quote appends src to dst as a JSON string, escaping only what JSON
// requires ('"', '\\' and control characters, the common ones by their short
// escapes) and replacing invalid UTF-8 with U+FFFD, as jsontext.AppendQuote
// writes it, in one pass.
func Quote[S ~[]byte | ~string](dst []byte, src S) []byte {
	var b []byte
	switch v := any(src).(type) {
	case []byte:
		b = v
	case string:
		// Only read, never kept: no copy of a chunk of up to a few MiB.
		b = unsafe.Slice(unsafe.StringData(v), len(v))
	default:
		b = []byte(src)
	}
	return quote(dst, b)
}

func quote(dst, src []byte) []byte {
	// Room for the text as it is, an escape in eight, and the eight
	// bytes stored ahead below; more escapes grow it as they come.
	if need := len(src) + len(src)/8 + 16; cap(dst)-len(dst) < need {
		dst = slices.Grow(dst, need)
	}
	dst = append(dst, '"')
	i := 0
	for {
		// As in Unquote: eight bytes stored, then kept up to the first
		// that needs a look of its own.
		for i+8 <= len(src) {
			if cap(dst)-len(dst) < 16 {
				dst = slices.Grow(dst, 16+(len(src)-i)/4)
			}
			x := binary.LittleEndian.Uint64(src[i:])
			l := len(dst)
			binary.LittleEndian.PutUint64(dst[l:l+8], x)
			m := special(x)
			if m == 0 {
				dst = dst[:l+8]
				i += 8
				continue
			}
			k := bits.TrailingZeros64(m) / 8
			dst = dst[:l+k]
			i += k
			break
		}
		if i >= len(src) {
			return append(dst, '"')
		}
		c := src[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
				i++
				continue
			}
			dst = append(dst, src[i:i+size]...)
			i += size
			continue
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c >= 0x20:
			dst = append(dst, c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
	}
}

const hexDigits = "0123456789abcdef"

// Skip reads the JSON string at the start of src as a lenient decoder
// does (jsontext with AllowInvalidUTF8: any byte over 0x7F and any \u
// escape taken, control characters and other escapes refused) and returns
// the number of bytes it took, quotes included, or 0 and false. It only
// finds where the string ends; a strict reading of its text is Unquote's.
func Skip(src []byte) (int, bool) {
	if len(src) == 0 || src[0] != '"' {
		return 0, false
	}
	i := 1
	for {
	words:
		for i+8 <= len(src) {
			// A one-letter escape is passed over within its word, and so
			// is a byte marked by a borrow (see special), instead of
			// leaving the loop for each: text has one every line.
			m := syntax(binary.LittleEndian.Uint64(src[i:]))
			for m != 0 {
				k := bits.TrailingZeros64(m) / 8
				switch c := src[i+k]; {
				case c == '\\' && k < 7 && shortEscapes[src[i+k+1]] != 0:
					m &^= 0x8080 << (8 * k)
				case c >= 0x20 && c != '"' && c != '\\':
					m &^= 0x80 << (8 * k)
				default:
					i += k
					break words
				}
			}
			i += 8
		}
		if i >= len(src) {
			return 0, false
		}
		switch c := src[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(src) {
				return 0, false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(src, i+2); !ok {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		case c < 0x20:
			return 0, false
		default:
			i++
		}
	}
}

// ValidText reports whether the JSON text b decodes without
// replacement: it is valid UTF-8 and every \u escape of a surrogate is half
// of a pair. b must be valid JSON, where a backslash occurs only inside a
// string and starts an escape.
func ValidText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) || b[i+1] != 'u' {
			i++ // a one-character escape, \\ among them
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return false
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			lo, ok := hex4(b, i+8)
			if !ok || b[i+6] != '\\' || b[i+7] != 'u' || lo < 0xDC00 || lo >= 0xE000 {
				return false
			}
			i += 11
		case r >= 0xDC00 && r < 0xE000:
			return false
		default:
			i += 5
		}
	}
	return true
}

// SkipSpace returns the index of the first byte of b at or after i that is
// not JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Scanned is what Scan learned of a string besides its length.
type Scanned struct {
	// Escaped: the string holds a backslash escape, so its text is not
	// its JSON between the quotes.
	Escaped bool
	// Valid: Unquote takes the string (valid UTF-8, each surrogate
	// escape half of a pair); Unescape then reads it.
	Valid bool
}

// Scan is Skip that also tells whether Unquote would take the string, and
// whether it holds an escape, so that a reader that must find where a
// string ends anyway (the daemon's frame reader) does the only pass over
// it that checks it: the string is then read with Unescape, or, with no
// escape, is its own text, with no second pass.
func Scan(src []byte) (int, Scanned, bool) {
	if len(src) == 0 || src[0] != '"' {
		return 0, Scanned{}, false
	}
	s := Scanned{Valid: true}
	i := 1
	for {
	words:
		for i+8 <= len(src) {
			// As in Unquote, with what Skip takes: a one-letter escape
			// and a byte marked by a borrow are passed over within their
			// word.
			m := special(binary.LittleEndian.Uint64(src[i:]))
			for m != 0 {
				k := bits.TrailingZeros64(m) / 8
				switch c := src[i+k]; {
				case c == '\\' && k < 7 && shortEscapes[src[i+k+1]] != 0:
					s.Escaped = true
					m &^= 0x8080 << (8 * k)
				case c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\':
					m &^= 0x80 << (8 * k)
				default:
					i += k
					break words
				}
			}
			i += 8
		}
		if i >= len(src) {
			return 0, Scanned{}, false
		}
		switch c := src[i]; {
		case c == '"':
			return i + 1, s, true
		case c == '\\':
			s.Escaped = true
			if i+1 >= len(src) {
				return 0, Scanned{}, false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(src, i+2)
				if !ok {
					return 0, Scanned{}, false
				}
				i += 6
				switch {
				case r >= 0xD800 && r < 0xDC00:
					// Valid only with its low half next; either way
					// the next escape is read as one of its own.
					lo, ok := hex4(src, i+2)
					if i+1 >= len(src) || src[i] != '\\' || src[i+1] != 'u' || !ok || lo < 0xDC00 || lo >= 0xE000 {
						s.Valid = false
					} else {
						i += 6
					}
				case r >= 0xDC00 && r < 0xE000:
					s.Valid = false
				}
			default:
				return 0, Scanned{}, false
			}
		case c < 0x20:
			return 0, Scanned{}, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				s.Valid = false
			}
			i += size
		}
	}
}

// Unescape appends the text of src, a whole string that Scan found Valid
// (its opening quote first, its closing one last), to dst. It checks
// nothing again, and finds the escapes with bytes.IndexByte, faster than
// any pass that must also check each byte. As with Unquote, dst may be
// src[:0], or better src[1:1]: it never writes a byte before it has read
// the bytes of src at that place, and the text before the first escape,
// already where it goes in src[1:1], is not copied.
func Unescape(dst, src []byte) []byte {
	end := len(src) - 1
	i, start := 1, 1
	for {
		j := bytes.IndexByte(src[i:end], '\\')
		if j < 0 {
			return appendText(dst, src[start:end])
		}
		i += j
		dst = appendText(dst, src[start:i])
		if e := shortEscapes[src[i+1]]; e != 0 {
			dst = append(dst, e)
			i += 2
		} else {
			// A \u escape, or a pair of them: Scan checked both.
			r, _ := hex4(src, i+2)
			i += 6
			if r >= 0xD800 && r < 0xDC00 {
				lo, _ := hex4(src, i+2)
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
		}
		start = i
	}
}

// appendText appends text to dst, without a copy where dst ends where text
// starts (Unescape in place).
func appendText(dst, text []byte) []byte {
	if n := len(dst); len(text) > 0 && cap(dst)-n >= len(text) && &dst[:n+1][n] == &text[0] {
		return dst[:n+len(text)]
	}
	return append(dst, text...)
}
