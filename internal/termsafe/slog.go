package termsafe

import (
	"encoding"
	"io"
	"log/slog"
	"unicode"
	"unicode/utf8"
)

// ReplaceAttr returns a slog.HandlerOptions.ReplaceAttr for a
// slog.TextHandler that renders the message and every string value (and
// every error, Stringer and TextMarshaler value, which the handler would
// print as text) safe for a terminal. next, if not nil, runs first.
//
// The text handler already quotes a value holding a space, '=', '"', a
// control character or any rune strconv.Quote escapes (C0, C1, bidi and
// format characters, invalid UTF-8), so a quoted value is left to it: escaping
// it here as well would double every backslash. A value the handler prints
// unquoted is written with String, which also escapes what strconv.Quote
// lets through (default-ignorable letters that render as nothing) and doubles
// a backslash, so that "\x1b" in an unquoted value is never the four
// characters typed by a client. Either way each escape is Go's.
//
// Use it for text logs only; JSON logs keep values exact (encoding/json
// escapes every control character). NewTextHandler also escapes the
// default-ignorable letters strconv.Quote keeps inside quoted values.
func ReplaceAttr(next func(groups []string, a slog.Attr) slog.Attr) func(groups []string, a slog.Attr) slog.Attr {
	return func(groups []string, a slog.Attr) slog.Attr {
		if next != nil {
			a = next(groups, a)
		}
		var s string
		switch a.Value.Kind() {
		case slog.KindString:
			s = a.Value.String()
		case slog.KindAny:
			switch v := a.Value.Any().(type) {
			case error:
				s = v.Error()
			case encoding.TextMarshaler:
				b, err := v.MarshalText()
				if err != nil {
					return a
				}
				s = string(b)
			case interface{ String() string }:
				s = v.String()
			default:
				return a
			}
		default:
			return a
		}
		if t := String(s); !textQuotes(t) {
			s = t
		}
		a.Value = slog.StringValue(s)
		return a
	}
}

// NewTextHandler is slog.NewTextHandler with opts.ReplaceAttr wrapped by
// ReplaceAttr, writing through a filter that escapes, inside quoted values,
// the runes String escapes but strconv.Quote keeps (U+3164 and the other
// default-ignorable letters). Each line it writes holds only printable text
// and its final newline.
func NewTextHandler(w io.Writer, opts *slog.HandlerOptions) *slog.TextHandler {
	o := slog.HandlerOptions{}
	if opts != nil {
		o = *opts
	}
	o.ReplaceAttr = ReplaceAttr(o.ReplaceAttr)
	return slog.NewTextHandler(ignorableWriter{w}, &o)
}

// ignorableWriter escapes the runes String escapes in text the text handler
// wrote. After ReplaceAttr such a rune can only be left inside a quoted value,
// where strconv.Quote has already doubled every backslash, so \uXXXX there
// is unambiguous. The handler writes each record with one Write call.
type ignorableWriter struct{ w io.Writer }

func (iw ignorableWriter) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) && p[i] < utf8.RuneSelf {
		i++
	}
	if i == len(p) {
		return iw.w.Write(p)
	}
	b := make([]byte, 0, len(p)+16)
	b = append(b, p[:i]...)
	for i < len(p) {
		r, size := utf8.DecodeRune(p[i:])
		if size > 1 && escapeRune(r) {
			b = appendEscaped(b, string(p[i:i+size]))
		} else {
			b = append(b, p[i:i+size]...)
		}
		i += size
	}
	if _, err := iw.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// textQuotes reports whether slog.TextHandler writes s quoted (with
// strconv.Quote); it mirrors the handler's own rule: an empty value, a
// space, '=', '"', a C0 control, or a non-ASCII rune that is a space,
// not printable, or not valid UTF-8.
func textQuotes(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
