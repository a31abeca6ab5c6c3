package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// checkJSON parses src as one JSON value.
func checkJSON(src []byte) []problem {
	if json.Valid(src) {
		return nil
	}
	var v json.RawMessage
	err := json.Unmarshal(src, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if err == nil {
			return nil
		}
		return []problem{{off: 0, msg: err.Error()}}
	}
	if strings.HasPrefix(se.Error(), "unexpected end of JSON input") {
		return []problem{{off: len(src), msg: jsonEOFMessage(src), eof: true}}
	}
	// Offset counts the bytes read, the offending one included.
	return []problem{{off: max(int(se.Offset)-1, 0), msg: jsonMessage(se.Error())}}
}

// jsonContexts turns encoding/json's "looking for"/"after" phrases into what
// the parser expected, which is what a model needs to fix the text.
var jsonContexts = []struct{ suffix, expected string }{
	{"looking for beginning of object key string", "expected a double-quoted object key"},
	{"after object key:value pair", "expected ',' or '}' after an object member"},
	{"after object key", "expected ':' after the object key"},
	{"after array element", "expected ',' or ']' after an array element"},
	{"looking for beginning of value", "expected a value (object, array, string, number, true, false or null)"},
	{"after top-level value", "expected nothing after the top-level value"},
	{"in string literal", "control characters in a string must be escaped"},
	{"in string escape code", "expected a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"},
	{"in \\u hexadecimal character escape", "expected four hex digits after \\u"},
	{"in numeric literal", "expected a digit"},
	{"after decimal point in numeric literal", "expected a digit after the decimal point"},
	{"in exponent of numeric literal", "expected a digit in the exponent"},
	{"in literal true (expecting 'r')", "expected true"},
	{"in literal true (expecting 'u')", "expected true"},
	{"in literal true (expecting 'e')", "expected true"},
	{"in literal false (expecting 'a')", "expected false"},
	{"in literal false (expecting 'l')", "expected false"},
	{"in literal false (expecting 's')", "expected false"},
	{"in literal false (expecting 'e')", "expected false"},
	{"in literal null (expecting 'u')", "expected null"},
	{"in literal null (expecting 'l')", "expected null"},
}

// jsonMessage rewrites an encoding/json syntax error message.
func jsonMessage(msg string) string {
	for _, c := range jsonContexts {
		if strings.HasSuffix(msg, c.suffix) {
			found := strings.TrimSpace(strings.TrimSuffix(msg, c.suffix))
			found = strings.TrimPrefix(found, "invalid character ")
			return fmt.Sprintf("unexpected character %s: %s", found, c.expected)
		}
	}
	return msg
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
// commas, as tsconfig.json and VS Code settings do. Comments and trailing
// commas are blanked out (newlines kept) so offsets still point into src.
func checkJSONC(src []byte) []problem {
	return checkJSON(blankJSONC(src))
}

// blankJSONC returns a copy of src with comments and trailing commas
// replaced by spaces.
func blankJSONC(src []byte) []byte {
	out := bytes.Clone(src)
	blank := func(from, to int) {
		for k := from; k < to && k < len(out); k++ {
			if out[k] != '\n' && out[k] != '\r' {
				out[k] = ' '
			}
		}
	}
	lastComma := -1 // offset of a comma not yet followed by a value
	for i := 0; i < len(out); i++ {
		switch b := out[i]; {
		case b == '"':
			lastComma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case b == '/' && i+1 < len(out) && out[i+1] == '/':
			j := i
			for j < len(out) && out[j] != '\n' {
				j++
			}
			blank(i, j)
			i = j - 1
		case b == '/' && i+1 < len(out) && out[i+1] == '*':
			j := bytes.Index(out[i+2:], []byte("*/"))
			if j < 0 {
				// Unclosed comment: leave it for the parser to reject.
				return out
			}
			blank(i, i+2+j+2)
			i = i + 2 + j + 1
		case b == ',' && lastComma != -1:
			// Two commas in a row: leave both for the parser to reject.
			lastComma = -2
		case b == ',' && lastComma == -1:
			lastComma = i
		case b == '}' || b == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
		default:
			lastComma = -1
		}
	}
	return out
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
