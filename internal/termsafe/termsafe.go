// Package termsafe renders strings that came from a model or a client for a
// terminal, so that printing them can neither drive the terminal nor change
// how the surrounding text reads.
//
// A model chooses the intent, the target path and the content of a session,
// and a client chooses its name; orionctl, oriond's text logs and the proxy
// print them. Printed raw, ESC [1A ESC [2K moves the cursor up and erases
// the line above (a harmless-looking line then hides the real target), OSC 52
// writes the clipboard, OSC 0 sets the window title, and a bidi override
// (U+202E) makes "txt.exe" read as "exe.txt". String makes each of these
// visible instead:
//
//   - C0 controls (tab and newline included: a value stays on its line and in
//     its table column) and DEL become \t, \n, \r or \xNN; ESC is \x1b, so
//     no escape sequence (CSI, OSC, DCS, ...) can start;
//   - C1 controls (U+0080..U+009F, which some terminals obey as 8-bit CSI and
//     OSC), bidi controls (U+061C, U+200E, U+200F, U+202A..U+202E,
//     U+2066..U+2069), every other format character (category Cf: zero-width
//     spaces and joiners, U+FEFF, the tag characters U+E0000..) and the line
//     and paragraph separators U+2028/U+2029 become \uXXXX or \UXXXXXXXX;
//     so do the default-ignorable letters that render as nothing (U+115F,
//     U+1160, U+3164, U+FFA0, ...), which could pass for an empty name;
//   - a byte that is not part of valid UTF-8 becomes \xNN;
//   - a backslash becomes \\, so the output is unambiguous: "\x1b" in the
//     output means the byte 0x1B, and a name that really holds the four
//     characters \x1b is shown as \\x1b.
//
// The escapes are Go's (strconv.Quote's) without the surrounding quotes, so
// an escaped value can be read back with strconv.Unquote after adding them.
// Everything else, non-ASCII letters and emoji included, is kept as is.
//
// Only human-readable output goes through String. JSON output is exact: the
// encoder escapes control characters itself, and a script needs the real
// value.
package termsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// String returns s with every control character, escape-sequence
// introducer, bidi control, invisible format character and invalid UTF-8
// byte written as a visible escape, and each backslash doubled. A string that
// needs no escape is returned unchanged, without allocating.
func String(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	return string(appendEscaped(b, s[i:]))
}

// Text is String for text shown as lines: a diff, the last lines of a
// file, a multi-line error message. It keeps newlines and tabs, which only
// start a line or move the cursor right, and escapes everything else String
// escapes, carriage returns included (one would let a line overwrite
// itself). A line of the result therefore shows what a line of s held; a
// newline inside a model-supplied value still starts a new line, so print a
// single value with String.
func Text(s string) string {
	i := firstUnsafeText(s)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		j := strings.IndexAny(s[i:], "\n\t")
		if j < 0 {
			return string(appendEscaped(b, s[i:]))
		}
		b = appendEscaped(b, s[i:i+j])
		b = append(b, s[i+j])
		i += j + 1
	}
	return string(b)
}

// firstUnsafeText is firstUnsafe for Text: newlines and tabs are kept.
func firstUnsafeText(s string) int {
	for off := 0; ; {
		i := firstUnsafe(s[off:])
		if i < 0 {
			return -1
		}
		if c := s[off+i]; c != '\n' && c != '\t' {
			return off + i
		}
		off += i + 1
	}
}

// Strings returns a copy of ss with String applied to each element.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// Append appends String(s) to dst and returns the extended slice.
func Append(dst []byte, s string) []byte {
	i := firstUnsafe(s)
	if i < 0 {
		return append(dst, s...)
	}
	dst = append(dst, s[:i]...)
	return appendEscaped(dst, s[i:])
}

// Safe reports whether String(s) == s: s holds nothing that String escapes.
func Safe(s string) bool { return firstUnsafe(s) < 0 }

// firstUnsafe returns the index of the first byte of s that String must
// rewrite, or -1. Printable ASCII other than the backslash is the fast path.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || escapeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

// escapeRune reports whether the valid, non-ASCII rune r is written as an
// escape.
func escapeRune(r rune) bool {
	switch {
	case r <= 0x9f: // C1 controls
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point) ||
		isNoncharacter(r)
}

// isNoncharacter reports whether r is one of Unicode's 66 noncharacters,
// which have no glyph and which some terminals mishandle.
func isNoncharacter(r rune) bool {
	return r >= 0xfdd0 && r <= 0xfdef || r&0xfffe == 0xfffe
}

func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case !escapeRune(r):
			b = append(b, s[i:i+size]...)
		case r <= 0xffff:
			b = append(b, '\\', 'u')
			b = appendHex(b, uint32(r), 4)
		default:
			b = append(b, '\\', 'U')
			b = appendHex(b, uint32(r), 8)
		}
		i += size
	}
	return b
}

func appendHex(b []byte, v uint32, digits int) []byte {
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[v>>uint(shift)&0xf])
	}
	return b
}
