package trace

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits bound what one event may carry. The zero value of a field takes
// its default.
type Limits struct {
	// MaxString is the longest string value kept, in bytes (default
	// 16 KiB); a longer one is cut on a character boundary and marked.
	MaxString int
	// MaxKey is the longest object key kept, in bytes (default 256).
	MaxKey int
	// MaxDepth is the deepest nesting of objects and arrays kept (default
	// 32); deeper values are replaced by a marker string.
	MaxDepth int
	// MaxItems is the most elements kept of one array or object (default
	// 1000).
	MaxItems int
	// MaxFields is the largest encoded Fields object, in bytes (default
	// 256 KiB); a larger one is replaced by a marked preview.
	MaxFields int
	// MaxValues is the most values (of any kind, at any depth) kept of one
	// event (default 100000). It bounds the work on values that share
	// parts, such as a map that contains itself twice.
	MaxValues int
}

// Defaults for Limits.
const (
	DefaultMaxString = 16 << 10
	DefaultMaxKey    = 256
	DefaultMaxDepth  = 32
	DefaultMaxItems  = 1000
	DefaultMaxFields = 256 << 10
	DefaultMaxValues = 100000
)

func (l Limits) withDefaults() Limits {
	if l.MaxString <= 0 {
		l.MaxString = DefaultMaxString
	}
	if l.MaxKey <= 0 {
		l.MaxKey = DefaultMaxKey
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	if l.MaxFields <= 0 {
		l.MaxFields = DefaultMaxFields
	}
	if l.MaxValues <= 0 {
		l.MaxValues = DefaultMaxValues
	}
	return l
}

// Markers left where something was cut or replaced. They are plain text so
// that a reader of the JSON sees them where the data was.
const (
	// nulReplacement stands for a NUL character, which PostgreSQL's jsonb
	// (and text) cannot store: U+2400 SYMBOL FOR NULL.
	nulReplacement = "\u2400"
	// truncatedKey is the key added to an object that lost keys, and the
	// key of the preview object that replaces an oversized Fields.
	truncatedKey = "…truncated"
)

// TruncationMarker is appended to a string cut at the MaxString limit; it
// names the original length in bytes, before any repair, so a reader knows
// how much is missing.
func TruncationMarker(total int) string {
	return fmt.Sprintf("…[truncated: %d bytes in all]", total)
}

// CleanString returns s as a string that any JSON consumer, PostgreSQL's
// jsonb included, accepts: invalid UTF-8 (lone surrogates encoded as UTF-8
// among it) becomes U+FFFD, NUL becomes U+2400, and a string longer than max
// bytes is cut on a character boundary and ends with TruncationMarker.
func CleanString(s string, max int) string {
	total := len(s)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", nulReplacement)
	}
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + TruncationMarker(total)
	}
	return s
}

// Sanitize returns a copy of v made only of JSON-safe values: nil, bool,
// int64, uint64, finite float64, json.Number, cleaned strings, []any and
// map[string]any, within the limits. Encoding its result with encoding/json
// cannot fail and yields valid JSON.
//
// Conversions: NaN and infinities become the strings "NaN", "+Inf" and
// "-Inf"; a json.Number that is not a finite JSON number becomes a string;
// []byte is text (not base64); time.Time is RFC 3339 in UTC; time.Duration
// is its String form; an error is its message; json.RawMessage is decoded
// (so "\ud800" escapes become U+FFFD) and sanitized, or kept as a string if
// it is not valid JSON; values with a MarshalJSON or MarshalText method and
// other structs go through those methods or encoding/json, then are
// sanitized. A value that cannot be encoded becomes a string describing it.
func Sanitize(v any, lim Limits) any {
	lim = lim.withDefaults()
	s := sanitizer{lim: lim, budget: lim.MaxValues}
	return s.value(v, 0)
}

type sanitizer struct {
	lim Limits
	// budget is how many more values may be kept.
	budget int
}

var (
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	timeType          = reflect.TypeFor[time.Time]()
	durationType      = reflect.TypeFor[time.Duration]()
	numberType        = reflect.TypeFor[json.Number]()
	errorType         = reflect.TypeFor[error]()
)

func (s *sanitizer) str(v string) string { return CleanString(v, s.lim.MaxString) }

func (s *sanitizer) depthMarker() string {
	return fmt.Sprintf("…[nesting deeper than %d levels cut]", s.lim.MaxDepth)
}

// value sanitizes v found at nesting depth d (the top level is 0).
func (s *sanitizer) value(v any, d int) (out any) {
	if s.budget--; s.budget < 0 {
		if s.budget == -1 {
			return fmt.Sprintf("…[more than %d values; the rest cut]", s.lim.MaxValues)
		}
		return nil
	}
	// A panicking MarshalJSON or String method must not take the recorder
	// down with it.
	defer func() {
		if r := recover(); r != nil {
			out = s.str(fmt.Sprintf("…[value of type %T could not be encoded: %v]", v, r))
		}
	}()
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return s.str(x)
	case bool:
		return x
	case int:
		return int64(x)
	case int64:
		return x
	case int32:
		return int64(x)
	case uint64:
		return x
	case uint:
		return uint64(x)
	case uint32:
		return uint64(x)
	case float64:
		return finite(x)
	case float32:
		return finite(float64(x))
	case json.Number:
		return number(x)
	case json.RawMessage:
		return s.raw(x, d)
	case []byte:
		return s.str(string(x))
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	case map[string]any:
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		return s.object(len(x), func(yield func(string, any)) {
			for k, v := range x {
				yield(k, v)
			}
		}, d)
	case []any:
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		return s.array(len(x), func(i int) any { return x[i] }, d)
	case []string:
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		return s.array(len(x), func(i int) any { return x[i] }, d)
	case error:
		return s.str(x.Error())
	}
	return s.reflectValue(reflect.ValueOf(v), d)
}

// reflectValue handles every type the fast path in value does not.
func (s *sanitizer) reflectValue(rv reflect.Value, d int) any {
	if !rv.IsValid() {
		return nil
	}
	t := rv.Type()
	switch {
	case t == rawMessageType:
		return s.raw(rv.Bytes(), d)
	case t == timeType:
		return rv.Interface().(time.Time).UTC().Format(time.RFC3339Nano)
	case t == durationType:
		return time.Duration(rv.Int()).String()
	case t == numberType:
		return number(json.Number(rv.String()))
	}
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
	}
	if t.Implements(jsonMarshalerType) {
		b, err := rv.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return s.str(fmt.Sprintf("…[%s: MarshalJSON failed: %v]", t, err))
		}
		return s.raw(b, d)
	}
	if t.Implements(textMarshalerType) {
		b, err := rv.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return s.str(fmt.Sprintf("…[%s: MarshalText failed: %v]", t, err))
		}
		return s.str(string(b))
	}
	if t.Implements(errorType) {
		return s.str(rv.Interface().(error).Error())
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		return s.value(rv.Elem().Interface(), d)
	case reflect.String:
		return s.str(rv.String())
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return finite(rv.Float())
	case reflect.Complex64, reflect.Complex128:
		return s.str(strconv.FormatComplex(rv.Complex(), 'g', -1, 128))
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return s.str(string(rv.Bytes()))
		}
		fallthrough
	case reflect.Array:
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		return s.array(rv.Len(), func(i int) any { return rv.Index(i).Interface() }, d)
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		return s.object(rv.Len(), func(yield func(string, any)) {
			it := rv.MapRange()
			for it.Next() {
				yield(mapKey(it.Key()), it.Value().Interface())
			}
		}, d)
	case reflect.Struct:
		if d >= s.lim.MaxDepth {
			return s.depthMarker()
		}
		// encoding/json knows the struct's tags; its output is sanitized
		// again like any other JSON. A struct it cannot encode (a NaN
		// field, a channel) is walked field by field instead.
		if b, err := json.Marshal(rv.Interface()); err == nil {
			return s.raw(b, d)
		}
		return s.structFields(rv, d)
	}
	return s.str(fmt.Sprintf("…[value of type %s is not JSON]", t))
}

// structFields walks a struct's exported fields, named by their json tags.
func (s *sanitizer) structFields(rv reflect.Value, d int) any {
	t := rv.Type()
	return s.object(t.NumField(), func(yield func(string, any)) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Name
			tag, omitempty := f.Tag.Get("json"), false
			if tag == "-" {
				continue
			}
			if tag != "" {
				parts := strings.Split(tag, ",")
				if parts[0] != "" {
					name = parts[0]
				}
				for _, o := range parts[1:] {
					omitempty = omitempty || o == "omitempty" || o == "omitzero"
				}
			}
			fv := rv.Field(i)
			if omitempty && fv.IsZero() {
				continue
			}
			yield(name, fv.Interface())
		}
	}, d)
}

func mapKey(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		if b, err := tm.MarshalText(); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(k.Interface())
}

// object sanitizes n key/value pairs produced by each into a map, keeping
// at most MaxItems of them (the first in key order) and noting the rest.
func (s *sanitizer) object(n int, each func(yield func(string, any)), d int) map[string]any {
	type kv struct {
		k string
		v any
	}
	pairs := make([]kv, 0, n)
	each(func(k string, v any) { pairs = append(pairs, kv{CleanString(k, s.lim.MaxKey), v}) })
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
	out := make(map[string]any, min(len(pairs), s.lim.MaxItems)+1)
	for i, p := range pairs {
		if i == s.lim.MaxItems {
			out[truncatedKey] = fmt.Sprintf("%d keys in all, %d kept", len(pairs), s.lim.MaxItems)
			break
		}
		out[p.k] = s.value(p.v, d+1)
	}
	return out
}

// array sanitizes n elements, keeping at most MaxItems and then a marker.
func (s *sanitizer) array(n int, at func(int) any, d int) []any {
	out := make([]any, 0, min(n, s.lim.MaxItems+1))
	for i := range n {
		if i == s.lim.MaxItems {
			out = append(out, fmt.Sprintf("…[truncated: %d items in all]", n))
			break
		}
		out = append(out, s.value(at(i), d+1))
	}
	return out
}

// raw decodes JSON text and sanitizes what it holds. encoding/json turns a
// lone surrogate escape such as "\ud800" into U+FFFD while decoding; text
// that is not valid JSON is kept as a (cleaned) string.
func (s *sanitizer) raw(b []byte, d int) any {
	if d >= s.lim.MaxDepth {
		return s.depthMarker()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s.str(string(b))
	}
	return s.value(v, d)
}

// finite returns f, or a string naming it when JSON cannot hold it.
func finite(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

// number keeps n when it is a JSON number a float64 holds without overflow
// or underflow (so every consumer, PostgreSQL's numeric included, reads it);
// otherwise it becomes a string.
func number(n json.Number) any {
	s := string(n)
	if !isJSONNumber(s) {
		return CleanString(s, DefaultMaxKey)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	// Underflow parses as zero without an error.
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	if f == 0 && strings.ContainsAny(mantissa, "123456789") {
		return s
	}
	return n
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// encodeFields returns the JSON object for fields, sanitized and within
// MaxFields. It never fails.
func encodeFields(fields map[string]any, lim Limits) json.RawMessage {
	lim = lim.withDefaults()
	if len(fields) == 0 {
		return nil
	}
	clean := Sanitize(fields, lim)
	b := marshal(clean)
	if len(b) <= lim.MaxFields {
		return b
	}
	return oversized(b, lim)
}

// oversized replaces the encoded fields b, too big even after every string
// was cut, with a readable preview of them, as a string.
func oversized(b []byte, lim Limits) json.RawMessage {
	preview := CleanString(string(b), min(lim.MaxString, lim.MaxFields/2))
	return marshal(map[string]any{
		truncatedKey: fmt.Sprintf("fields were %d bytes, over the %d-byte limit", len(b), lim.MaxFields),
		"preview":    preview,
	})
}

// marshal encodes a sanitized value. Sanitized values always encode; should
// that ever fail, the failure itself is encoded instead.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		enc.Encode(map[string]any{truncatedKey: CleanString("fields could not be encoded: "+err.Error(), DefaultMaxString)})
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
