package mcpserver

import (
	"bytes"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A message over the transport's bound is not held: it streams past a
// skimmer, which keeps only what an answer needs (the id, the method and,
// for a tool call, the tool's name), wherever those members lie. Hosts
// built on the TypeScript SDK put id after params, so the bounded prefix
// alone would not hold it.

// maxKept bounds each value the skimmer keeps; an id or a method name is
// far shorter.
const maxKept = 256

// skimmer reads a JSON object's top level as it streams past.
type skimmer struct {
	// size is the bytes seen.
	size  int64
	depth int
	// obj and expectKey describe the containers at depths 1 and 2 (the
	// message and its params): whether each is an object, and whether
	// its next string is a member name.
	obj       [3]bool
	expectKey [3]bool
	// key is the member name last read at depths 1 and 2.
	key [3]string

	inStr, esc, strIsKey, inLit bool
	// cur is the value or name being kept (nil: none); long marks that it
	// went over maxKept; target is where a finished value goes.
	cur    []byte
	long   bool
	target *[]byte

	id, method, name []byte
}

// feed reads the next bytes of the message.
func (s *skimmer) feed(p []byte) {
	s.size += int64(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.inStr {
			if s.esc {
				s.esc = false
				s.keep(c)
				continue
			}
			if s.cur == nil {
				// Nothing kept (a file's content): on to the next quote
				// or backslash.
				j := bytes.IndexAny(p[i:], `"\`)
				if j < 0 {
					return
				}
				i += j
				c = p[i]
			}
			switch c {
			case '\\':
				s.esc = true
				s.keep(c)
			case '"':
				s.inStr = false
				s.endString()
			default:
				s.keep(c)
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			s.endLiteral()
		case '{', '[':
			s.endLiteral()
			s.startValue(false)
			s.depth++
			if s.depth < len(s.obj) {
				s.obj[s.depth] = c == '{'
				s.expectKey[s.depth] = c == '{'
				s.key[s.depth] = ""
			}
		case '}', ']':
			s.endLiteral()
			if s.depth > 0 {
				s.depth--
			}
		case ':':
			s.endLiteral()
			if s.depth < len(s.obj) {
				s.expectKey[s.depth] = false
			}
		case ',':
			s.endLiteral()
			if s.depth < len(s.obj) && s.obj[s.depth] {
				s.expectKey[s.depth] = true
			}
		case '"':
			s.inStr = true
			if s.depth > 0 && s.depth < len(s.obj) && s.obj[s.depth] && s.expectKey[s.depth] {
				s.strIsKey = true
				s.cur, s.long = make([]byte, 0, 16), false
				continue
			}
			s.strIsKey = false
			s.startValue(true)
			s.keep(c)
		default:
			if !s.inLit {
				s.inLit = true
				s.startValue(true)
			}
			s.keep(c)
		}
	}
}

// startValue begins a value at the current depth, kept when it is one of
// those an answer needs and a scalar.
func (s *skimmer) startValue(scalar bool) {
	var t *[]byte
	switch {
	case s.depth == 1 && s.obj[1] && s.key[1] == "id":
		t = &s.id
	case s.depth == 1 && s.obj[1] && s.key[1] == "method":
		t = &s.method
	case s.depth == 2 && s.obj[1] && s.obj[2] && s.key[1] == "params" && s.key[2] == "name":
		t = &s.name
	}
	if t == nil || !scalar {
		return
	}
	s.target, s.cur, s.long = t, make([]byte, 0, 32), false
}

func (s *skimmer) keep(c byte) {
	if s.cur == nil {
		return
	}
	if len(s.cur) >= maxKept {
		s.long = true
		return
	}
	s.cur = append(s.cur, c)
}

func (s *skimmer) endString() {
	if s.strIsKey {
		s.strIsKey = false
		if s.depth < len(s.key) {
			s.key[s.depth] = string(s.cur)
			if s.long {
				s.key[s.depth] = ""
			}
		}
		s.cur = nil
		return
	}
	s.keep('"')
	s.endValue()
}

func (s *skimmer) endLiteral() {
	if s.inLit {
		s.inLit = false
		s.endValue()
	}
}

func (s *skimmer) endValue() {
	if s.target != nil && !s.long {
		*s.target = s.cur
	}
	s.target, s.cur, s.long = nil, nil, false
}

// skimmed is what an answer to a message can use: its id as JSON text
// ("" when it has none that can be answered), its method and, for a tool
// call, the tool's name.
type skimmed struct {
	size         int64
	id           string
	method, name string
}

func (s *skimmer) result() skimmed {
	r := skimmed{size: s.size, id: validID(s.id)}
	jsonv2.Unmarshal(s.method, &r.method)
	jsonv2.Unmarshal(s.name, &r.name)
	return r
}

// validID is raw when it is an id JSON-RPC allows (a string or a number),
// else "".
func validID(raw []byte) string {
	v := jsontext.Value(raw)
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case '"', '0':
		return string(raw)
	}
	return ""
}

// skim reads a whole message, for a message that is not too large but
// cannot be decoded: its id, if it can be found, gets the answer.
func skim(line []byte) skimmed {
	var s skimmer
	s.feed(line)
	s.endLiteral()
	return s.result()
}
