package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/orion-agent/orion/internal/jsonstr"
)

// strict is what the daemon's general decoder makes of the JSON text b: the
// string, and whether it took it (encoding/json/v2 with its defaults
// refuses invalid UTF-8 and lone surrogate escapes, which encoding/json
// would replace with U+FFFD).
func strict(b []byte) (string, bool) {
	var s string
	if err := jsonv2.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}

func TestUnquote(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"Empty", `""`, "", true},
		{"Plain", `"hello, world"`, "hello, world", true},
		{"Long", `"` + strings.Repeat("abcdefgh", 100) + `"`, strings.Repeat("abcdefgh", 100), true},
		{"Escapes", `"a\"b\\c\/d\be\ff\ng\rh\ti"`, "a\"b\\c/d\be\ff\ng\rh\ti", true},
		{"Unicode", `"\u00e9\u4e16 é世"`, "é世 é世", true},
		{"Pair", `"\ud83d\ude00"`, "😀", true},
		{"PairUpper", `"\uD83D\uDE00x"`, "😀x", true},
		{"FourByte", "\"\xf0\x9f\x98\x80\"", "😀", true},
		{"QuoteAfterBlock", `"abcdefghijklmnop\"q"`, "abcdefghijklmnop\"q", true},
		{"Unterminated", `"abc`, "", false},
		{"UnterminatedEscape", `"abc\`, "", false},
		{"NoQuote", `abc"`, "", false},
		{"Control", "\"a\nb\"", "", false},
		{"ControlLate", "\"abcdefghijkl\x01\"", "", false},
		{"BadEscape", `"\x41"`, "", false},
		{"ShortHex", `"\u12"`, "", false},
		{"BadHex", `"\u12g4"`, "", false},
		{"LoneHigh", `"\ud800"`, "", false},
		{"HighThenText", `"\ud800abcdef"`, "", false},
		{"HighThenHigh", `"\ud800\ud800"`, "", false},
		{"LoneLow", `"\udc00"`, "", false},
		{"InvalidByte", "\"a\xffb\"", "", false},
		{"Truncated", "\"a\xe4\xb8\"", "", false},
		{"Overlong", "\"\xc0\xaf\"", "", false},
		{"SurrogateUTF8", "\"\xed\xa0\x80\"", "", false},
		{"Del", "\"\x7f\"", "\x7f", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, ok := jsonstr.Unquote([]byte("prefix"), []byte(tc.in+" rest"))
			if ok != tc.ok {
				t.Fatalf("Unquote(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			}
			if !ok {
				if string(got) != "prefix" || n != 0 {
					t.Fatalf("refused Unquote(%q) returned %q, %d; want dst unchanged and 0", tc.in, got, n)
				}
				return
			}
			if string(got) != "prefix"+tc.want || n != len(tc.in) {
				t.Fatalf("Unquote(%q) = %q, %d; want %q, %d", tc.in, got, n, "prefix"+tc.want, len(tc.in))
			}
			if s, sok := strict([]byte(tc.in)); !sok || s != tc.want {
				t.Fatalf("the case disagrees with encoding/json/v2: %q, %v", s, sok)
			}
		})
	}
}

// FuzzUnquote: Unquote takes a string exactly when the strict decoder
// does, and then reads it as encoding/json does, and as long.
// FuzzUnquoteInPlace: a string unquoted over its own JSON reads as it reads
// into a buffer of its own: Unquote never writes where it has yet to read.
func FuzzUnquoteInPlace(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b\\c\/\b\f\n\r\t"`, `"\u00e9\ud83d\ude00x"`, `"\u0041\u00e9\u4e16\ud83d\ude00"`,
		"\"\xe4\xb8\x96\\n\"", `"` + strings.Repeat(`ab\n`, 40) + `"`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wn, wok := jsonstr.Unquote(nil, in)
		buf := bytes.Clone(in)
		got, n, ok := jsonstr.Unquote(buf[:0], buf)
		if ok != wok || n != wn || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("Unquote(%q) in place = %q, %d, %v; into a buffer of its own %q, %d, %v", in, got, n, ok, want, wn, wok)
		}
	})
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\"b\\c\/\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00\u0041"`,
		"\"\xff\"", "\"\xe4\xb8\x96\"", `"abcdefghijklmnopqrstuvwxyz\u0000"`, `"abc`, `"\`, "\"\x1f\"", `"x" tail`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, n, ok := jsonstr.Unquote(nil, in)
		if len(in) == 0 || in[0] != '"' {
			if ok {
				t.Fatalf("Unquote(%q) took a string that does not start with a quote", in)
			}
			return
		}
		// The string is the first value of in; strict and encoding/json
		// read exactly that value.
		end := n
		if !ok {
			end = len(in)
			if i := closingQuote(in); i > 0 {
				end = i
			}
		}
		want, sok := strict(in[:end])
		if ok != sok {
			t.Fatalf("Unquote(%q) ok = %v, encoding/json/v2 ok = %v", in[:end], ok, sok)
		}
		if !ok {
			return
		}
		if string(got) != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json/v2 %q", in[:n], got, want)
		}
		var v1 string
		if err := json.Unmarshal(in[:n], &v1); err != nil || v1 != string(got) {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q (%v)", in[:n], got, v1, err)
		}
		if n < 2 || in[n-1] != '"' {
			t.Fatalf("Unquote(%q) took %d bytes, not ending at a quote", in, n)
		}
		// Appending keeps what dst held.
		if got2, _, _ := jsonstr.Unquote([]byte("x"), in); !bytes.Equal(got2, append([]byte("x"), got...)) {
			t.Fatalf("appending to dst gave %q", got2)
		}
	})
}

// closingQuote returns the end of the string that opens in (one past its
// closing quote) as a lenient reader finds it, or -1.
func closingQuote(in []byte) int {
	if len(in) == 0 || in[0] != '"' {
		return -1
	}
	for i := 1; i < len(in); i++ {
		switch in[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// FuzzQuote: Quote writes what jsontext.AppendQuote writes, and what it
// writes reads back as the text (invalid UTF-8 as U+FFFD).
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "abc", "a\"b\\c\x00\x01\x1f\n\r\t\b\f", "é世😀", "\xff", "\xe4\xb8", "<>&\u2028\u2029\x7f", strings.Repeat("abcdefgh\n", 9)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got := jsonstr.Quote([]byte("x"), in)
		want, _ := jsontext.AppendQuote([]byte("x"), in)
		if !bytes.Equal(got, want) {
			t.Fatalf("Quote(%q) = %s, jsontext %s", in, got, want)
		}
		if s := jsonstr.Quote(nil, string(in)); !bytes.Equal(s, got[1:]) {
			t.Fatalf("Quote of the string %q = %s, of the bytes %s", in, s, got[1:])
		}
		back, n, ok := jsonstr.Unquote(nil, got[1:])
		if !ok || n != len(got)-1 || (utf8.Valid(in) && string(back) != string(in)) {
			t.Fatalf("Quote(%q) = %s reads back as %q, %d, %v", in, got, back, n, ok)
		}
	})
}

// FuzzSkip: Skip ends a string where jsontext, reading leniently (invalid
// UTF-8 allowed, as the frame reader reads), ends it, and takes exactly the
// strings jsontext takes.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\"b\\c\/\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00\u0041"`,
		"\"\xff\"", "\"\xe4\xb8\x96\"", `"abcdefghijklmnopqrstuvwxyz\u0000"`, `"abc`, `"\`, "\"\x1f\"", `"x" tail`, `"\x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n, ok := jsonstr.Skip(in)
		if len(in) == 0 || in[0] != '"' {
			if ok {
				t.Fatalf("Skip(%q) took a string that does not start with a quote", in)
			}
			return
		}
		end := n
		if !ok {
			end = len(in)
			if i := closingQuote(in); i > 0 {
				end = i
			}
		}
		valid := jsontext.Value(in[:end]).IsValid(jsontext.AllowInvalidUTF8(true))
		if ok != valid {
			t.Fatalf("Skip(%q) ok = %v, jsontext %v", in[:end], ok, valid)
		}
	})
}

// ValidText refuses exactly the texts that encoding/json would decode with
// a replacement character: invalid UTF-8 and lone surrogate escapes.
func TestValidText(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{`"plain"`, true},
		{`"\ud83d\ude00 a pair"`, true},
		{`"\\ud800 is an escaped backslash"`, true},
		{`"\u00e9"`, true},
		{`"\ud800 alone"`, false},
		{`"\ude00 a low half alone"`, false},
		{`"\ud800\u0041 a high half, then no low half"`, false},
		{"\"\xff invalid UTF-8\"", false},
		{`"cut \ud83d"`, false},
	} {
		if got := jsonstr.ValidText([]byte(c.text)); got != c.want {
			t.Errorf("ValidText(%s) = %v, want %v", c.text, got, c.want)
		}
	}
}

// FuzzScan: Scan ends a string exactly where Skip does and takes the same
// strings; it calls a string Valid exactly when Unquote takes it, and
// Escaped exactly when a backslash is in it; Unescape then reads a Valid
// string as Unquote does, in place too, and a Valid string with no escape
// is its own text.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\"b\\c\/\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00\u0041"`,
		`"\ud800\ud800\udc00"`, `"\ud800\u0041"`, `"\ud800\"`, "\"\xff\"", "\"\xe4\xb8\x96\"", "\"\xed\xa0\x80\"",
		`"abcdefghijklmnopqrstuvwxyz\u0000"`, `"abc`, `"\`, "\"\x1f\"", `"x" tail`, `"\x"`,
		`"` + strings.Repeat(`abcdefg\n`, 20) + `"`, `"` + strings.Repeat("é世😀 ", 20) + `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n, s, ok := jsonstr.Scan(in)
		wn, wok := jsonstr.Skip(in)
		if n != wn || ok != wok {
			t.Fatalf("Scan(%q) = %d, %v; Skip %d, %v", in, n, ok, wn, wok)
		}
		if !ok {
			return
		}
		text, un, uok := jsonstr.Unquote(nil, in)
		if s.Valid != uok || (uok && un != n) {
			t.Fatalf("Scan(%q) Valid = %v; Unquote took it: %v (%d bytes of %d)", in, s.Valid, uok, un, n)
		}
		if esc := bytes.IndexByte(in[1:n-1], '\\') >= 0; s.Escaped != esc {
			t.Fatalf("Scan(%q) Escaped = %v, want %v", in[:n], s.Escaped, esc)
		}
		if !s.Valid {
			return
		}
		if got := jsonstr.Unescape([]byte("x"), in[:n]); string(got) != "x"+string(text) {
			t.Fatalf("Unescape(%q) = %q, Unquote %q", in[:n], got[1:], text)
		}
		buf := bytes.Clone(in[:n])
		if got := jsonstr.Unescape(buf[:0], buf); !bytes.Equal(got, text) {
			t.Fatalf("Unescape(%q) in place = %q, Unquote %q", in[:n], got, text)
		}
		buf = bytes.Clone(in[:n])
		if got := jsonstr.Unescape(buf[1:1], buf); !bytes.Equal(got, text) {
			t.Fatalf("Unescape(%q) in place, after the quote, = %q, Unquote %q", in[:n], got, text)
		}
		if !s.Escaped && string(in[1:n-1]) != string(text) {
			t.Fatalf("Scan(%q) found no escape, but its text is %q", in[:n], text)
		}
	})
}
