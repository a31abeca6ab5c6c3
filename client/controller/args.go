package controller

// The tool-call arguments a model streams are JSON text that may arrive cut
// off (the response hit its output limit) or malformed. encoding/json only
// says "unexpected end of JSON input"; to tell the model exactly what to
// resend we need to know which fields did arrive complete and where the
// text stopped. This scanner walks the top-level object by hand and keeps
// every complete member. The Node package implements the same walk, so both
// produce the same tool results; positions count Unicode characters (code
// points), which both languages agree on.

import (
	"unicode/utf16"
)

// Scan statuses.
const (
	argsOK        = "ok"
	argsEmpty     = "empty"
	argsTruncated = "truncated"
	argsMalformed = "malformed"
)

// argValue is one member's value: its JSON kind and, for strings, the
// decoded text; for objects and arrays, the raw text (skipped loosely: it
// may still not be valid JSON).
type argValue struct {
	kind string // string, number, boolean, null, object, array
	str  string
	raw  string
}

// argsScan is what scanArgs found.
type argsScan struct {
	status string
	// pos is, for malformed, the 0-based index of the unexpected character;
	// for truncated, the number of characters received.
	pos int
	// bad is the unexpected character of a malformed input.
	bad rune
	// inValueOf names the member whose value was being read when the input
	// stopped; lastKey the last member read completely.
	inValueOf string
	lastKey   string
	fields    map[string]argValue
}

type argsScanner struct {
	in  []rune
	i   int
	res argsScan
}

// errStop unwinds the scanner; res already says why.
type errStop struct{}

// scanArgs scans tool-call arguments.
func scanArgs(s string) (res argsScan) {
	sc := &argsScanner{in: []rune(s), res: argsScan{status: argsOK, fields: map[string]argValue{}}}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(errStop); !ok {
				panic(r)
			}
		}
		res = sc.res
	}()
	sc.ws()
	if sc.i == len(sc.in) {
		sc.res.status = argsEmpty
		return
	}
	sc.object()
	sc.ws()
	if sc.i < len(sc.in) {
		sc.malformed()
	}
	return
}

func (sc *argsScanner) truncated() {
	sc.res.status = argsTruncated
	sc.res.pos = len(sc.in)
	panic(errStop{})
}

func (sc *argsScanner) malformed() {
	sc.res.status = argsMalformed
	sc.res.pos = sc.i
	sc.res.bad = sc.in[sc.i]
	panic(errStop{})
}

// next returns the next character, stopping as truncated at the end.
func (sc *argsScanner) peek() rune {
	if sc.i >= len(sc.in) {
		sc.truncated()
	}
	return sc.in[sc.i]
}

func (sc *argsScanner) expect(c rune) {
	if sc.peek() != c {
		sc.malformed()
	}
	sc.i++
}

func (sc *argsScanner) ws() {
	for sc.i < len(sc.in) {
		switch sc.in[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// object reads the top-level object, recording its members.
func (sc *argsScanner) object() {
	sc.expect('{')
	sc.ws()
	if sc.peek() == '}' {
		sc.i++
		return
	}
	for {
		sc.ws()
		if sc.peek() != '"' {
			sc.malformed()
		}
		key := sc.str()
		sc.ws()
		sc.expect(':')
		sc.ws()
		sc.res.inValueOf = key
		v := sc.value()
		sc.res.inValueOf = ""
		sc.res.fields[key] = v
		sc.res.lastKey = key
		sc.ws()
		switch sc.peek() {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return
		default:
			sc.malformed()
		}
	}
}

func (sc *argsScanner) value() argValue {
	switch c := sc.peek(); {
	case c == '"':
		return argValue{kind: "string", str: sc.str()}
	case c == '{' || c == '[':
		start := sc.i
		sc.nested()
		raw := string(sc.in[start:sc.i])
		if c == '{' {
			return argValue{kind: "object", raw: raw}
		}
		return argValue{kind: "array", raw: raw}
	case c == 't':
		sc.literal("true")
		return argValue{kind: "boolean"}
	case c == 'f':
		sc.literal("false")
		return argValue{kind: "boolean"}
	case c == 'n':
		sc.literal("null")
		return argValue{kind: "null"}
	case c == '-' || (c >= '0' && c <= '9'):
		sc.number()
		return argValue{kind: "number"}
	default:
		sc.malformed()
		return argValue{}
	}
}

func (sc *argsScanner) literal(word string) {
	for _, w := range word {
		if sc.peek() != w {
			sc.malformed()
		}
		sc.i++
	}
}

// number accepts JSON's number characters loosely: the members we act on
// are strings, and a wrong number is still reported by its position.
func (sc *argsScanner) number() {
	for {
		switch sc.peek() {
		case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			sc.i++
		default:
			return
		}
	}
}

// nested skips a nested object or array, minding strings.
func (sc *argsScanner) nested() {
	depth := 0
	for {
		switch sc.peek() {
		case '{', '[':
			depth++
			sc.i++
		case '}', ']':
			depth--
			sc.i++
			if depth == 0 {
				return
			}
		case '"':
			sc.str()
		default:
			sc.i++
		}
	}
}

// str reads a string at the opening quote and returns it decoded.
func (sc *argsScanner) str() string {
	sc.expect('"')
	var out []rune
	for {
		c := sc.peek()
		switch {
		case c == '"':
			sc.i++
			return string(out)
		case c < 0x20:
			sc.malformed()
		case c != '\\':
			out = append(out, c)
			sc.i++
			continue
		}
		sc.i++ // the backslash
		switch e := sc.peek(); e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			sc.i++
			r := sc.hex4()
			if utf16.IsSurrogate(r) {
				// A pair is two escapes; a lone half becomes U+FFFD, as
				// encoding/json and the Node scanner both decode it.
				if sc.i+1 < len(sc.in) && sc.in[sc.i] == '\\' && sc.in[sc.i+1] == 'u' {
					save := sc.i
					sc.i += 2
					if r2 := sc.hex4(); utf16.DecodeRune(r, r2) != 0xFFFD {
						out = append(out, utf16.DecodeRune(r, r2))
						continue
					}
					sc.i = save
				}
				r = 0xFFFD
			}
			out = append(out, r)
			continue
		default:
			sc.malformed()
		}
		sc.i++
	}
}

func (sc *argsScanner) hex4() rune {
	var r rune
	for range 4 {
		c := sc.peek()
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | (c - 'A' + 10)
		default:
			sc.malformed()
		}
		sc.i++
	}
	return r
}
