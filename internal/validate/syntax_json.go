package validate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tailscale/hujson"
)

// jsonOptions read JSON as encoding/json and most tools do: a repeated
// object key and invalid UTF-8 in a string are not syntax errors (repair
// reports invalid UTF-8 on its own).
var jsonOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// checkJSON parses src as one JSON value. The parser (jsontext) gives the
// byte offset of an error and the JSON pointer of the value it is in;
// what was expected there is read from the decoder's state (the kind of
// the innermost open object or array and how many names and values it
// has read) and from the bytes around the offset, never from the
// parser's English message.
func checkJSON(src []byte) []problem {
	if jsontext.Value(src).IsValid(jsonOptions...) {
		return nil
	}
	d := jsontext.NewDecoder(bytes.NewReader(src), jsonOptions...)
	read := false
	for {
		_, err := d.ReadToken()
		if err == nil {
			read = true
			if d.StackDepth() == 0 {
				// One complete top-level value: only whitespace may follow.
				off := skipJSONSpace(src, int(d.InputOffset()))
				if off < len(src) {
					return []problem{{off: off, msg: jsonUnexpected(src, off, "", "expected nothing after the top-level value")}}
				}
				return nil
			}
			continue
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || (err == io.EOF && !read) {
			return []problem{{off: len(src), msg: jsonEOFMessage(src), eof: true}}
		}
		var se *jsontext.SyntacticError
		if !errors.As(err, &se) {
			return []problem{{off: 0, msg: err.Error()}}
		}
		return []problem{jsonProblem(d, src, int(se.ByteOffset), se.JSONPointer)}
	}
}

// jsonProblem describes the syntax error at off, where the decoder d
// stopped, in terms of what the text needed there.
func jsonProblem(d *jsontext.Decoder, src []byte, off int, ptr jsontext.Pointer) problem {
	off = min(max(off, 0), len(src))
	// The token the decoder was reading starts after the last one it read
	// and the separator that followed it.
	start := skipJSONSpace(src, int(d.InputOffset()))
	if start < len(src) && (src[start] == ',' || src[start] == ':') {
		start = skipJSONSpace(src, start+1)
	}
	where := string(ptr)
	if start < off && start < len(src) {
		// Inside a string, number or literal.
		return problem{off: off, msg: jsonUnexpected(src, off, where, jsonTokenExpected(src, start, off))}
	}
	kind, n := d.StackIndex(d.StackDepth())
	// The parser blames a separator it cannot accept at the start of
	// a value; where a separator belongs (after a member or element), it
	// is the byte after it that is wrong.
	if off < len(src) && src[off] == ',' && n > 0 && (kind == '[' || n%2 == 0) {
		off = skipJSONSpace(src, off+1)
	}
	prev := byte(0)
	if i := lastJSONByte(src, off); i >= 0 {
		prev = src[i]
	}
	const value = "expected a value (object, array, string, number, true, false or null)"
	var expected string
	switch {
	case d.StackDepth() == 0:
		expected = value
	case kind == '{' && n%2 == 1 && prev == ':':
		expected = value
	case kind == '{' && n%2 == 1:
		expected = "expected ':' after the object key"
	case kind == '{' && (prev == ',' || prev == '{'):
		expected = "expected a double-quoted object key"
	case kind == '{':
		expected = "expected ',' or '}' after an object member"
	case prev == ',' || prev == '[':
		expected = value
	default:
		expected = "expected ',' or ']' after an array element"
	}
	return problem{off: off, msg: jsonUnexpected(src, off, where, expected)}
}

// jsonTokenExpected is what the token starting at start needed at off.
func jsonTokenExpected(src []byte, start, off int) string {
	switch c := src[start]; {
	case c == '"':
		switch {
		case off < len(src) && src[off] == '\\' && off+1 < len(src) && src[off+1] == 'u':
			return "expected four hex digits after \\u"
		case off < len(src) && src[off] == '\\':
			return "expected a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"
		case off < len(src) && src[off] < 0x20:
			return "control characters in a string must be escaped"
		}
		return "expected a string"
	case c == '-' || ('0' <= c && c <= '9'):
		switch p := src[off-1]; {
		case p == '.':
			return "expected a digit after the decimal point"
		case p == 'e' || p == 'E' || ((p == '+' || p == '-') && off-1 > start):
			return "expected a digit in the exponent"
		}
		return "expected a digit"
	case c == 't':
		return "expected true"
	case c == 'f':
		return "expected false"
	case c == 'n':
		return "expected null"
	}
	return "expected a value (object, array, string, number, true, false or null)"
}

// jsonUnexpected is the message for the character at off, in the value at
// JSON pointer where.
func jsonUnexpected(src []byte, off int, where, expected string) string {
	found := "end of input"
	if off < len(src) {
		r, size := utf8.DecodeRune(src[off:])
		if r == utf8.RuneError && size == 1 {
			found = fmt.Sprintf(`byte '\x%02x'`, src[off])
		} else {
			found = "character " + strconv.QuoteRune(r)
		}
	}
	msg := "unexpected " + found
	if where != "" {
		msg += " in " + truncatePointer(where)
	}
	return msg + ": " + expected
}

// truncatePointer bounds a JSON pointer (made of the file's own keys) in a
// message, keeping its end, the innermost part.
func truncatePointer(p string) string {
	const max = 80
	if len(p) <= max {
		return p
	}
	cut := len(p) - max
	for cut < len(p) && !utf8.RuneStart(p[cut]) {
		cut++
	}
	return "…" + p[cut:]
}

// skipJSONSpace returns the offset of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// lastJSONByte returns the offset of the last byte before i that is not
// JSON whitespace, or -1.
func lastJSONByte(src []byte, i int) int {
	for i--; i >= 0; i-- {
		if c := src[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return -1
}

// jsonEOFMessage says what is still open at the end of a truncated JSON
// text, innermost first, so a model knows where to continue.
func jsonEOFMessage(src []byte) string {
	type open struct {
		c   byte
		off int
	}
	var stack []open
	inString, escaped := false, false
	stringStart := 0
	for i, b := range src {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString, stringStart = true, i
		case b == '{' || b == '[':
			stack = append(stack, open{b, i})
		case (b == '}' || b == ']') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	ls := newLines(src)
	var parts []string
	if inString {
		l, c := ls.position(stringStart)
		parts = append(parts, fmt.Sprintf("the string that starts at line %d, column %d is not closed (expected '\"')", l, c))
	}
	for i := len(stack) - 1; i >= 0 && len(parts) < 3; i-- {
		l, c := ls.position(stack[i].off)
		what, closer := "object", '}'
		if stack[i].c == '[' {
			what, closer = "array", ']'
		}
		parts = append(parts, fmt.Sprintf("the %s opened at line %d, column %d is not closed (expected '%c')", what, l, c, closer))
	}
	if len(parts) == 0 {
		if len(bytes.TrimSpace(src)) == 0 {
			return "unexpected end of JSON input: expected a value, found nothing"
		}
		return "unexpected end of JSON input: the value is incomplete"
	}
	return "unexpected end of JSON input: " + strings.Join(parts, "; ")
}

// checkJSONC parses JSON that may have // and /* */ comments and trailing
// commas, as tsconfig.json and VS Code settings do (HuJSON, or JWCC):
// github.com/tailscale/hujson parses it, and reports the line and byte
// column of an error in the text of its error ("hujson: line L, column C:
// ..."; TestJSONCPositions pins that form).
func checkJSONC(src []byte) []problem {
	if _, err := hujson.Standardize(src); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return []problem{{off: len(src), msg: jsonEOFMessage(src), eof: true}}
		}
		p := problem{off: 0, msg: err.Error()}
		var line, col int
		if _, serr := fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &line, &col); serr == nil {
			p = problem{off: -1, line: line, col: col}
			if inner := errors.Unwrap(err); inner != nil {
				p.msg = inner.Error()
			}
		}
		return []problem{p}
	}
	return nil
}

// checkJSONLines parses each non-blank line as a JSON value.
func checkJSONLines(src []byte) []problem {
	off := 0
	var ps []problem
	for _, l := range splitLines(src) {
		if !isBlank(l) {
			for _, p := range checkJSON(trimEOL(l)) {
				p.off += off
				// Only the last line can be cut off.
				p.eof = p.eof && off+len(l) >= contentEnd(src)
				ps = append(ps, p)
				if len(ps) >= maxProblems {
					return ps
				}
			}
		}
		off += len(l)
	}
	return ps
}
