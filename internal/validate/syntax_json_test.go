package validate

import (
	"encoding/json"
	"strings"
	"testing"
)

// Each JSON syntax error is reported at the byte at fault, with what was
// found, the JSON pointer of the value it is in, and what the text needed
// there: the model reads this to correct the file.
func TestJSONErrorOffsets(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		off       int
		msg       string
	}{
		{"MissingComma", "{\n  \"a\": 1\n  \"b\": 2\n}\n", 13, `unexpected character '"': expected ',' or '}' after an object member`},
		{"TrailingCommaInArray", "[1, 2,]\n", 6, "unexpected character ']': expected a value"},
		{"TrailingCommaInObject", `{"a":1,}`, 7, `unexpected character '}': expected a double-quoted object key`},
		{"LeadingComma", `{,}`, 1, `unexpected character ',': expected a double-quoted object key`},
		{"MissingColon", `{"a" 1}`, 5, `unexpected character '1' in /a: expected ':' after the object key`},
		{"MissingValue", `{"a":}`, 5, `unexpected character '}' in /a: expected a value`},
		{"NumberKey", `{1:2}`, 1, `unexpected character '1': expected a double-quoted object key`},
		{"MissingArrayComma", `[1 2]`, 3, `unexpected character '2': expected ',' or ']' after an array element`},
		{"ControlInString", "[\"ab\", \"c\x01\"]", 9, `unexpected character '\x01' in /1: control characters in a string must be escaped`},
		{"BadEscape", `"a\qb"`, 2, `unexpected character '\\': expected a valid escape`},
		{"BadUnicodeEscape", `"\u12G4"`, 1, `expected four hex digits after \u`},
		{"Number", `[1, 2.x]`, 6, `unexpected character 'x' in /1: expected a digit after the decimal point`},
		{"Exponent", `1e+x`, 3, `expected a digit in the exponent`},
		{"Minus", `-x`, 1, `unexpected character 'x': expected a digit`},
		{"Literal", `[true, fals]`, 11, `unexpected character ']' in /1: expected false`},
		{"AfterTopLevel", "{} x\n", 3, `unexpected character 'x': expected nothing after the top-level value`},
		{"TwoValues", "01", 1, `unexpected character '1': expected nothing after the top-level value`},
		{"BadStart", "+1", 0, `unexpected character '+': expected a value`},
		{"NonASCII", "[1, é]", 4, `unexpected character 'é' in /1: expected a value`},
		{"InvalidUTF8", "[1, \xff]", 4, `unexpected byte '\xff' in /1: expected a value`},
		{"Nested", `{"servers":[{"port":80,"host" "x"}]}`, 30, `unexpected character '"' in /servers/0/host: expected ':' after the object key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps := checkJSON([]byte(tt.src))
			if len(ps) != 1 {
				t.Fatalf("problems %+v, want one", ps)
			}
			p := ps[0]
			if p.off != tt.off || !strings.Contains(p.msg, tt.msg) || p.eof {
				t.Fatalf("got offset %d %q (eof %v), want offset %d %q", p.off, p.msg, p.eof, tt.off, tt.msg)
			}
		})
	}
}

// A cut-off text is reported at its end, as a cut: with what is still
// open.
func TestJSONTruncated(t *testing.T) {
	for src, want := range map[string]string{
		`{"a":[1,2`: "the array opened at line 1, column 6 is not closed (expected ']'); the object opened at line 1, column 1",
		`["ab`:      "the string that starts at line 1, column 2 is not closed",
		"":          "expected a value, found nothing",
		"nul":       "the value is incomplete",
	} {
		ps := checkJSON([]byte(src))
		if len(ps) != 1 || !ps[0].eof || ps[0].off != len(src) || !strings.Contains(ps[0].msg, want) {
			t.Errorf("%q: %+v, want a cut at %d mentioning %q", src, ps, len(src), want)
		}
	}
	// Valid JSON, with what encoding/json also accepts.
	for _, src := range []string{`{"a":1,"a":2}`, "\"\xff\"", " [1, {\"b\": null}] \n"} {
		if ps := checkJSON([]byte(src)); ps != nil {
			t.Errorf("%q: %+v", src, ps)
		}
	}
}

// JSONC errors come from hujson with their line and byte column, read from
// the form of its error text; a change of that form fails here.
func TestJSONCPositions(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{"{\n  // ok\n  \"a\": 1,,\n}\n", 3, 10, "','"},
		{"{\"a\": /* x */ }", 1, 15, "'}'"},
		{"{\n  /* é */ \"a\": 1 2}", 2, 19, "'2'"}, // a byte column,
	} {
		ps := checkJSONC([]byte(tt.src))
		if len(ps) != 1 || ps[0].off != -1 || ps[0].line != tt.line || ps[0].col != tt.col || !strings.Contains(ps[0].msg, tt.msg) ||
			strings.HasPrefix(ps[0].msg, "hujson:") {
			t.Errorf("%q: %+v, want line %d column %d mentioning %s", tt.src, ps, tt.line, tt.col, tt.msg)
		}
	}
	for _, src := range []string{"{\n  // c\n  \"a\": [1, 2,], /* d */\n}\n", "[]"} {
		if ps := checkJSONC([]byte(src)); ps != nil {
			t.Errorf("%q: %+v", src, ps)
		}
	}
	if ps := checkJSONC([]byte("{\"a\": [1,")); len(ps) != 1 || !ps[0].eof {
		t.Errorf("a cut JSONC text: %+v", ps)
	}
}

// FuzzCheckJSON: any input gets at most a few problems, each inside the
// text, and never a panic; valid JSON gets none.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{"{\"a\": [1, 2.5e-3, true, null, \"x\\u00e9\"]}", "[1,]", "{\"a\" 1}", "\"\\q\"", "-", "01", "{} {}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, check := range []func([]byte) []problem{checkJSON, checkJSONC} {
			ps := check(src)
			if len(ps) > maxProblems {
				t.Fatalf("%d problems", len(ps))
			}
			for _, p := range ps {
				if p.off > len(src) || p.msg == "" {
					t.Fatalf("%q: %+v", src, p)
				}
			}
		}
		if json.Valid(src) != (checkJSON(src) == nil) {
			t.Fatalf("%q: encoding/json says valid=%v, checkJSON %+v", src, json.Valid(src), checkJSON(src))
		}
	})
}
