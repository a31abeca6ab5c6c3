package trace

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/orion-agent/orion/protocol"
)

// Attr is one field of an event, typed so that the batcher encodes it
// without reflection: an event's Fields map goes through Sanitize, which
// looks at every value's type, copies the map and encodes it again, and
// that cost a whole-file write a quarter of its allocations. Build Attrs
// with String, Int, Uint, Float, Bool and Any; the JSON is the same as
// the same fields given in Fields.
type Attr struct {
	Key  string
	kind attrKind
	s    string
	n    int64
	u    uint64
	f    float64
	a    any
}

type attrKind uint8

const (
	attrString attrKind = iota
	attrInt
	attrUint
	attrFloat
	attrBool
	attrAny
)

// String is a string field, cleaned and cut as Sanitize cuts strings.
func String(key, v string) Attr { return Attr{Key: key, kind: attrString, s: v} }

// Int is an integer field.
func Int(key string, v int64) Attr { return Attr{Key: key, kind: attrInt, n: v} }

// Uint is an unsigned integer field.
func Uint(key string, v uint64) Attr { return Attr{Key: key, kind: attrUint, u: v} }

// Float is a number field; NaN and infinities become strings, as in
// Sanitize.
func Float(key string, v float64) Attr { return Attr{Key: key, kind: attrFloat, f: v} }

// Bool is a boolean field.
func Bool(key string, v bool) Attr {
	var n int64
	if v {
		n = 1
	}
	return Attr{Key: key, kind: attrBool, n: n}
}

// Millis is a duration field in milliseconds, to the microsecond, as
// request events give durations.
func Millis(key string, d time.Duration) Attr { return Float(key, millis(d)) }

// Any is a field of any other value, sanitized as a value of Fields is
// (see Sanitize): for values whose type Attr has no constructor for.
func Any(key string, v any) Attr { return Attr{Key: key, kind: attrAny, a: v} }

// value is a's value as it would stand in a Fields map.
func (a Attr) value() any {
	switch a.kind {
	case attrString:
		return a.s
	case attrInt:
		return a.n
	case attrUint:
		return a.u
	case attrFloat:
		return a.f
	case attrBool:
		return a.n != 0
	}
	return a.a
}

// field is the value of ev's field key, typed or not.
func (ev Event) field(key string) any {
	for i := len(ev.Attrs) - 1; i >= 0; i-- {
		if ev.Attrs[i].Key == key {
			return ev.Attrs[i].value()
		}
	}
	return ev.Fields[key]
}

// fieldsOf is the Fields map attrs stand for, with fields' own keys
// overridden by theirs, for an event that has both (the reflective path).
func fieldsOf(fields map[string]any, attrs []Attr) map[string]any {
	out := make(map[string]any, len(fields)+len(attrs))
	for k, v := range fields {
		out[k] = v
	}
	for _, a := range attrs {
		out[a.Key] = a.value()
	}
	return out
}

// encodeAttrs returns the JSON object for attrs, byte for byte what
// encodeFields returns for the same fields in a map, within the same
// limits. It never fails.
func encodeAttrs(attrs []Attr, lim Limits) []byte {
	lim = lim.withDefaults()
	if len(attrs) == 0 {
		return nil
	}
	if len(attrs) > lim.MaxItems {
		// Rare enough to take the map's path, which notes the keys cut.
		return encodeFields(fieldsOf(nil, attrs), lim)
	}
	// Keys as the map path orders them: cleaned, then sorted; a key given
	// twice keeps its last value, as a map assignment would.
	type keyed struct {
		k string
		i int
	}
	var small [16]keyed
	keys := small[:0]
	for i, a := range attrs {
		keys = append(keys, keyed{CleanString(a.Key, lim.MaxKey), i})
	}
	slices.SortStableFunc(keys, func(x, y keyed) int { return cmp.Compare(x.k, y.k) })
	s := sanitizer{lim: lim, budget: lim.MaxValues - 1}
	size := 2
	for _, a := range attrs {
		size += len(a.Key) + len(a.s) + 32
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	first := true
	for j, k := range keys {
		if j+1 < len(keys) && keys[j+1].k == k.k {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k.k)
		b = append(b, ':')
		b = s.appendAttr(b, attrs[k.i])
	}
	b = append(b, '}')
	if len(b) <= lim.MaxFields {
		return b
	}
	return oversized(b, lim)
}

// appendAttr appends a's value as the map path would encode it.
func (s *sanitizer) appendAttr(b []byte, a Attr) []byte {
	if a.kind == attrAny {
		return append(b, marshal(s.value(a.a, 1))...)
	}
	if s.budget--; s.budget < 0 {
		if s.budget == -1 {
			return appendString(b, "…[more than "+strconv.Itoa(s.lim.MaxValues)+" values; the rest cut]")
		}
		return append(b, "null"...)
	}
	switch a.kind {
	case attrString:
		return appendString(b, s.str(a.s))
	case attrInt:
		return strconv.AppendInt(b, a.n, 10)
	case attrUint:
		return strconv.AppendUint(b, a.u, 10)
	case attrBool:
		return strconv.AppendBool(b, a.n != 0)
	}
	return appendFloat(b, a.f)
}

// appendFloat appends f as encoding/json writes a float64, or the string
// finite makes of it.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendString(b, finite(f).(string))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString appends s as a JSON string exactly as encoding/json writes
// it without HTML escaping: '"', '\\' and control characters escaped (the
// common ones by their short escapes), U+2028 and U+2029 escaped, invalid
// UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEvent appends te as encoding/json encodes a protocol.TraceEvent
// whose Fields are compact JSON (as encodeFields and encodeAttrs return
// them): without the reflection of encoding it. ok is false for a time
// that encoding/json would refuse (a year outside 0-9999).
func appendEvent(b []byte, te *protocol.TraceEvent) ([]byte, bool) {
	if y := te.Time.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if b == nil {
		// Room for the names, the time and a few escapes.
		b = make([]byte, 0, 128+len(te.ID)+len(te.Type)+len(te.SessionID)+len(te.Method)+len(te.Fields))
	}
	b = append(b, `{"id":`...)
	b = appendString(b, te.ID)
	b = append(b, `,"time":"`...)
	b = te.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	b = appendString(b, string(te.Type))
	if te.SessionID != "" {
		b = append(b, `,"session_id":`...)
		b = appendString(b, te.SessionID)
	}
	if te.Method != "" {
		b = append(b, `,"method":`...)
		b = appendString(b, te.Method)
	}
	if len(te.Fields) > 0 {
		b = append(b, `,"fields":`...)
		b = append(b, te.Fields...)
	}
	return append(b, '}'), true
}
