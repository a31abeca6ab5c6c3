package termsafe_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/termsafe"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Plain", "notes/todo.md", "notes/todo.md"},
		{"Empty", "", ""},
		{"NonASCIILetters", "café/日本語/😀.md", "café/日本語/😀.md"},
		{"Space", "a b", "a b"},
		{"Backslash", `C:\x1b`, `C:\\x1b`},
		{"CursorUpEraseLine", "x\x1b[1A\x1b[2Kharmless.txt", `x\x1b[1A\x1b[2Kharmless.txt`},
		{"OSC52Clipboard", "\x1b]52;c;ZWNobyBoaQ==\x07", `\x1b]52;c;ZWNobyBoaQ==\x07`},
		{"OSC0TitleST", "\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\\`},
		{"TabNewlineCR", "a\tb\nc\rd", `a\tb\nc\rd`},
		{"NULAndDEL", "\x00\x7f", `\x00\x7f`},
		{"C1CSI", "\u009b2J", `\u009b2J`},
		{"C1Range", "\u0080\u009f", `\u0080\u009f`},
		{"RLO", "evil\u202etxt.exe", `evil\u202etxt.exe`},
		{"BidiControls", "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069",
			`\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`},
		{"ZeroWidth", "a\u200bb\ufeff", `a\u200bb\ufeff`},
		{"LineSeparators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"TagCharacters", "x\U000e0041\U000e007f", `x\U000e0041\U000e007f`},
		{"HangulFiller", "\u3164", `\u3164`},
		{"Noncharacter", "\ufffe\U0010ffff", `\ufffe\U0010ffff`},
		{"InvalidUTF8", "a\xffb\xc3", `a\xffb\xc3`},
		{"RawC1Byte", "\x9b2J", `\x9b2J`},
		{"Surrogate", "\xed\xa0\x80", `\xed\xa0\x80`},
		{"ReplacementCharKept", "\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termsafe.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := string(termsafe.Append([]byte("p:"), tt.in)); got != "p:"+tt.want {
				t.Errorf("Append(%q) = %q, want %q", tt.in, got, "p:"+tt.want)
			}
			if got, want := termsafe.Safe(tt.in), tt.in == tt.want; got != want {
				t.Errorf("Safe(%q) = %v, want %v", tt.in, got, want)
			}
		})
	}
}

func TestStringDoesNotAllocateWhenSafe(t *testing.T) {
	s := strings.Repeat("plain/path-é.md ", 8)
	if n := testing.AllocsPerRun(100, func() { _ = termsafe.String(s) }); n != 0 {
		t.Errorf("String of a safe string allocated %v times", n)
	}
}

// checkInert fails if out could drive a terminal or hide text: a byte below
// 0x20, DEL, invalid UTF-8, or a C1, bidi, format or separator rune.
func checkInert(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("String(%q) = %q: invalid UTF-8", in, out)
	}
	for _, r := range out {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
			unicode.In(r, unicode.Cf, unicode.Bidi_Control, unicode.Other_Default_Ignorable_Code_Point) {
			t.Fatalf("String(%q) = %q: holds %U", in, out, r)
		}
	}
}

// unescape reads String's output back with strconv.Unquote: String adds no
// quote of its own, so the raw quotes it keeps are escaped first.
func unescape(out string) (string, error) {
	return strconv.Unquote(`"` + strings.ReplaceAll(out, `"`, `\"`) + `"`)
}

func FuzzString(f *testing.F) {
	for _, s := range []string{
		"", "plain", `back\slash`, "\x1b[1A\x1b[2K", "\x1b]52;c;aGk=\x07", "\x1b]0;t\x1b\\",
		"\u202eabc", "\xff\xfe", "\u009b", "\U000e0041", "\ufffd", "é\u0301", "\"quoted\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := termsafe.String(in)
		checkInert(t, in, out)
		back, err := unescape(out)
		if err != nil {
			t.Fatalf("String(%q) = %q: not Go escapes: %v", in, out, err)
		}
		if back != in {
			t.Fatalf("String(%q) = %q reads back as %q: ambiguous", in, out, back)
		}
		if termsafe.Safe(in) != (out == in) {
			t.Fatalf("Safe(%q) = %v but String gives %q", in, termsafe.Safe(in), out)
		}
	})
}

func TestText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Plain", "line one\n\tline two\n", "line one\n\tline two\n"},
		{"CarriageReturn", "shown\rhidden\n", `shown\rhidden` + "\n"},
		{"EscapesPerLine", "a\x1b[2K\n\u202eb\n", `a\x1b[2K` + "\n" + `\u202eb` + "\n"},
		{"Backslash", "\\\n", `\\` + "\n"},
		{"InvalidAfterTab", "\t\xff", "\t" + `\xff`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termsafe.Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzText(f *testing.F) {
	f.Add("a\n\tb\r\x1b[1A\u202e\xff\\")
	f.Fuzz(func(t *testing.T, in string) {
		out := termsafe.Text(in)
		if strings.Count(out, "\n") != strings.Count(in, "\n") || strings.Count(out, "\t") != strings.Count(in, "\t") {
			t.Fatalf("Text(%q) = %q: newlines or tabs changed", in, out)
		}
		checkInert(t, in, strings.NewReplacer("\n", "", "\t", "").Replace(out))
		back, err := unescape(strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(out))
		if err != nil || back != in {
			t.Fatalf("Text(%q) = %q reads back as %q, %v", in, out, back, err)
		}
	})
}
