package validate

import (
	"bytes"
	"io"
	"testing"
)

// Windows-1252 has printable characters at 0x80-0x9F (€, curly quotes, Ÿ),
// where Latin-1 has C1 controls; its five unassigned bytes (0x81, 0x8D,
// 0x8F, 0x90, 0x9D) decode to U+FFFD, which still lets the structure be
// checked.
func TestCharsetReader(t *testing.T) {
	in := []byte{'a', 0x80, 0x85, 0x8a, 0x91, 0x93, 0x94, 0x96, 0x99, 0x9c, 0x9f, 0x81, 0x8d, 0x8f, 0x90, 0x9d, 0xe9, 0xff}
	for _, tt := range []struct{ charset, want string }{
		{"windows-1252", "a€…Š‘“”–™œŸ\ufffd\ufffd\ufffd\ufffd\ufffdéÿ"},
		{"CP1252", "a€…Š‘“”–™œŸ\ufffd\ufffd\ufffd\ufffd\ufffdéÿ"},
		{"ISO-8859-1", "a\u0080\u0085\u008a\u0091\u0093\u0094\u0096\u0099\u009c\u009f\u0081\u008d\u008f\u0090\u009déÿ"},
	} {
		r, err := charsetReader(tt.charset, bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.charset, got, err, tt.want)
		}
	}
	// An XML document declared in windows-1252 with those bytes is checked,
	// and found well-formed.
	doc := append([]byte(`<?xml version="1.0" encoding="windows-1252"?>`+"\n<p>"), in...)
	doc = append(doc, "</p>\n"...)
	if ps := checkXML(doc); ps != nil {
		t.Fatalf("%+v", ps)
	}
}
