package charset_test

import (
	"errors"
	"runtime"
	"testing"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/charset"
)

// Each form a file comes in is decoded to the UTF-8 a model reads and
// encoded back to the same bytes; the name the project gives wins over
// the bytes, a byte order mark over both.
func TestForFile(t *testing.T) {
	cases := []struct {
		name, in, named, codec, text string
		err                          error
	}{
		{"UTF8", "café\n", "", "UTF-8", "café\n", nil},
		{"UTF8BOM", "\xef\xbb\xbfx\n", "latin1", "UTF-8", "\xef\xbb\xbfx\n", nil},
		{"Latin1Detected", "caf\xe9 \x81\n", "", "ISO-8859-1", "café \u0081\n", nil},
		{"Windows1252Detected", "\x93caf\xe9 \x80\x94\n", "", "Windows-1252", "“café €”\n", nil},
		{"MixedLeftAlone", "café caf\xe9\n", "", "UTF-8", "café caf\xe9\n", nil},
		{"NULLeftAlone", "a\x00\xe9\n", "", "UTF-8", "a\x00\xe9\n", nil},
		{"Latin1Named", "caf\xe9\n", "latin1", "ISO-8859-1", "café\n", nil},
		{"Latin1NamedASCII", "cafe\n", "latin1", "ISO-8859-1", "cafe\n", nil},
		{"UnknownNameIgnored", "caf\xe9\n", "klingon", "Windows-1252", "café\n", nil},
		{"UTF16LEBOM", "\xff\xfeh\x00i\x00", "", "UTF-16LE", "hi", nil},
		{"UTF16BEBOM", "\xfe\xff\x00h\x00i", "", "UTF-16BE", "hi", nil},
		{"UTF16LEDetected", "h\x00i\x00\n\x00", "", "UTF-16LE", "hi\n", nil},
		{"UTF16BEDetected", "\x00h\x00i\x00\n", "", "UTF-16BE", "hi\n", nil},
		{"UTF16LENamed", "\xe9\x00\n\x00", "UTF-16LE", "UTF-16LE", "é\n", nil},
		{"ShiftJISNamed", "\x93\xfa\x96{\n", "SHIFT-JIS", "Shift_JIS", "日本\n", nil},
		{"UnpairedSurrogate", "\xff\xfea\x00\x00\xd8b\x00", "", "", "", charset.ErrUnsupportedEncoding},
		{"OddUTF16", "\xff\xfea\x00b", "", "", "", charset.ErrUnsupportedEncoding},
		{"UTF8NamedLatin1Stays", "caf\xc3\xa9\n", "ISO-8859-1", "ISO-8859-1", "cafÃ©\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			codec, err := charset.ForFile([]byte(c.in), c.named, "test")
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if got := codec.String(); got != c.codec {
				t.Fatalf("codec = %s, want %s", got, c.codec)
			}
			text, err := codec.Decode([]byte(c.in))
			if err != nil || string(text) != c.text {
				t.Fatalf("Decode = %q, %v; want %q", text, err, c.text)
			}
			back, err := codec.Encode(text)
			if err != nil || string(back) != c.in {
				t.Fatalf("Encode = %q, %v; want the file's bytes %q", back, err, c.in)
			}
		})
	}
}

// A character the file's charset has no byte for is refused, naming it
// and its line.
func TestEncodeRefuses(t *testing.T) {
	for _, named := range []string{"latin1", "windows-1252", "SHIFT-JIS"} {
		c, _, ok := charset.Lookup(named)
		if !ok || c == nil {
			t.Fatalf("%s: not known", named)
		}
		_, err := c.Encode([]byte("a\nb \U0001F600\n"))
		if !errors.Is(err, charset.ErrUnsupportedEncoding) {
			t.Fatalf("%s: err = %v", named, err)
		}
		if want := `line 2 has "😀" (U+1F600)`; !contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %s", named, err, want)
		}
	}
	c, _, _ := charset.Lookup("latin1")
	if _, err := c.Encode([]byte("5 €")); !errors.Is(err, charset.ErrUnsupportedEncoding) {
		t.Errorf("€ in Latin-1: %v", err)
	}
}

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{
		"latin1": "ISO-8859-1", "ISO-8859-1": "ISO-8859-1", "CP1252": "Windows-1252", "WINDOWS-1252": "Windows-1252",
		"UTF-16LE": "UTF-16LE", "utf-16be": "UTF-16BE", "Shift_JIS": "Shift_JIS", "EUC-JP": "EUC-JP",
		"ISO-8859-15": "ISO-8859-15", "KOI8-R": "KOI8-R", "utf-8": "UTF-8", "UTF-8-BOM": "UTF-8",
	} {
		c, _, ok := charset.Lookup(name)
		if !ok || c.String() != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", name, c, ok, want)
		}
	}
	// git's UTF-16 is what the system's iconv makes of it.
	want16 := "UTF-16BE"
	if runtime.GOOS == "linux" {
		want16 = "UTF-16LE"
	}
	if c, _, _ := charset.Lookup("UTF-16"); c.String() != want16 {
		t.Errorf("Lookup(UTF-16) = %v, want %s on %s", c, want16, runtime.GOOS)
	}
	if _, _, ok := charset.Lookup("klingon"); ok {
		t.Error("an unknown name was known")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// The cost an edit pays to know a file's encoding and convert it: the
// detection scan alone for UTF-8, a round trip for the others, 1 MiB each.
func BenchmarkForFile(b *testing.B) {
	line := func(s string, n int) []byte {
		var out []byte
		for len(out) < n {
			out = append(out, s...)
		}
		return out
	}
	utf16 := func(s []byte) []byte {
		out := []byte{0xff, 0xfe}
		for _, r := range string(s) {
			out = append(out, byte(r), byte(r>>8))
		}
		return out
	}
	ascii := line("    return fmt.Sprintf(\"%d items\", n) // count\n", 1<<20)
	cases := []struct {
		name  string
		data  []byte
		named string
	}{
		{"UTF8", line("    s := \"naïve café\" // ß\n", 1<<20), ""},
		{"Windows1252Detected", line("    s = \"\x93caf\xe9\x94 \x80\"\n", 1<<20), ""},
		{"Latin1Named", line("    s = \"caf\xe9\"\n", 1<<20), "latin1"},
		{"UTF16LEBOM", utf16(ascii[:1<<19]), ""},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				codec, text, err := charset.DecodeFile(c.data, c.named, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := codec.Encode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Whatever the bytes and the name, a file is either refused or decoded
// to valid UTF-8 that encodes back to exactly its bytes: nothing is ever
// garbled, and nothing panics.
func FuzzDecodeFile(f *testing.F) {
	for _, seed := range []struct {
		b     string
		named string
	}{
		{"caf\xe9\n", ""}, {"\x93a\x94 \x80\n", ""}, {"\xff\xfea\x00\n\x00", ""}, {"\xfe\xff\x00a", ""},
		{"a\x00b\x00", ""}, {"\x93\xfa\x96{\n", "SHIFT-JIS"}, {"a\x81\n", "shift_jis"}, {"caf\xc3\xa9", "latin1"},
		{"\xa4\xa2", "EUC-JP"}, {"x", "UTF-16"}, {"\xff\xfe\x00\xd8", ""},
	} {
		f.Add([]byte(seed.b), seed.named)
	}
	f.Fuzz(func(t *testing.T, b []byte, named string) {
		c, text, err := charset.DecodeFile(b, named, "fuzz")
		if err != nil {
			if !errors.Is(err, charset.ErrUnsupportedEncoding) {
				t.Fatalf("error %v is not ErrUnsupportedEncoding", err)
			}
			return
		}
		if c == nil {
			if string(text) != string(b) {
				t.Fatalf("UTF-8 text %q is not the bytes %q", text, b)
			}
			return
		}
		if !utf8.Valid(text) {
			t.Fatalf("%s text %q is not valid UTF-8", c, text)
		}
		back, err := c.Encode(text)
		if err != nil || string(back) != string(b) {
			t.Fatalf("%s: %q encodes back to %q, %v; want %q", c, text, back, err, b)
		}
	})
}
