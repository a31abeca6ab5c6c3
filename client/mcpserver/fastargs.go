package mcpserver

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/orion-agent/orion/internal/jsonstr"
)

// decodeFlat reads raw, a tool call's arguments, into the struct v points
// to, when raw is the common shape: one object whose members are strings,
// whole numbers and booleans, each for a field of that kind. A string is
// checked and unquoted in one pass (jsonstr), where the general decoder
// reads a 64 KiB content a byte at a time. It returns false, having set
// fields or not, for anything else (a nested value, a null, invalid UTF-8,
// a number that does not fit): decodeArgs then decodes raw again with the
// general decoder, which sets every field anew and words the errors.
func decodeFlat(raw []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	rv = rv.Elem()
	fields, ok := flatFieldsOf(rv.Type())
	if !ok {
		return false
	}
	// Given up half way, the struct is as it was for the general decoder
	// (the callers pass a zero one).
	before := reflect.New(rv.Type()).Elem()
	before.Set(rv)
	if !readFlat(raw, rv, fields) {
		rv.Set(before)
		return false
	}
	return true
}

func readFlat(raw []byte, rv reflect.Value, fields map[string]flatField) bool {
	i := jsonstr.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = jsonstr.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return jsonstr.SkipSpace(raw, i+1) == len(raw)
	}
	for {
		// A name with an escape is left to the general decoder, which
		// unescapes it before matching.
		n, ok := jsonstr.Skip(raw[i:])
		if !ok || n < 2 {
			return false
		}
		name := raw[i+1 : i+n-1]
		for _, c := range name {
			if c == '\\' {
				return false
			}
		}
		i = jsonstr.SkipSpace(raw, i+n)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = jsonstr.SkipSpace(raw, i+1)
		f, known := fields[string(name)]
		if n, ok = setFlat(rv, f, known, raw[i:]); !ok {
			return false
		}
		i = jsonstr.SkipSpace(raw, i+n)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = jsonstr.SkipSpace(raw, i+1)
		case '}':
			return jsonstr.SkipSpace(raw, i+1) == len(raw)
		default:
			return false
		}
	}
}

// setFlat reads the value at the start of b into field f of rv (only
// checks a string when the name is no field's, as the general decoder
// ignores unknown names) and returns its length.
func setFlat(rv reflect.Value, f flatField, known bool, b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if !known {
		if b[0] != '"' {
			return 0, false
		}
		return jsonstr.Skip(b)
	}
	fv := rv.Field(f.index)
	switch f.kind {
	case reflect.String:
		if b[0] != '"' {
			return 0, false
		}
		// The text is never longer than its quoted form; the buffer
		// becomes the string, not copied again (nothing else holds it).
		s, n, ok := jsonstr.Unquote(make([]byte, 0, stringCap(b)), b)
		if !ok {
			return 0, false
		}
		str := unsafe.String(unsafe.SliceData(s), len(s))
		if f.ptr {
			p := reflect.New(fv.Type().Elem())
			p.Elem().SetString(str)
			fv.Set(p)
		} else {
			fv.SetString(str)
		}
		return n, true
	case reflect.Bool:
		switch {
		case len(b) >= 4 && string(b[:4]) == "true":
			fv.SetBool(true)
			return 4, true
		case len(b) >= 5 && string(b[:5]) == "false":
			fv.SetBool(false)
			return 5, true
		}
		return 0, false
	}
	// A whole number, as JSON writes it: no fraction, exponent or
	// leading zero (those, and numbers out of range, are the general
	// decoder's to refuse or take).
	n := 0
	if n < len(b) && b[n] == '-' {
		n++
	}
	digits := n
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == digits || (b[digits] == '0' && n > digits+1) || (n < len(b) && (b[n] == '.' || b[n] == 'e' || b[n] == 'E')) {
		return 0, false
	}
	if fv.CanInt() {
		x, err := strconv.ParseInt(string(b[:n]), 10, 64)
		if err != nil || fv.OverflowInt(x) {
			return 0, false
		}
		fv.SetInt(x)
		return n, true
	}
	x, err := strconv.ParseUint(string(b[:n]), 10, 64)
	if err != nil || fv.OverflowUint(x) {
		return 0, false
	}
	fv.SetUint(x)
	return n, true
}

// stringCap is the room the text of the string at the start of b needs at
// most: all of b when b is short, else the string's quoted length, found by
// a pass that only looks for its closing quote, so that a long string does
// not reserve the room of the arguments after it.
func stringCap(b []byte) int {
	if len(b) <= 256 {
		return len(b)
	}
	if n, ok := jsonstr.Skip(b); ok {
		return n
	}
	return len(b)
}

// flatField is a field decodeFlat can set: a string (or a pointer to one),
// a bool or an integer.
type flatField struct {
	index int
	kind  reflect.Kind
	ptr   bool
}

// flatTypes caches, per struct type, its fields by JSON name, or nil when
// the type has a field decodeFlat does not set (it is then never used).
var flatTypes sync.Map // reflect.Type -> map[string]flatField

func flatFieldsOf(t reflect.Type) (map[string]flatField, bool) {
	if v, ok := flatTypes.Load(t); ok {
		m := v.(map[string]flatField)
		return m, m != nil
	}
	m := flatFields(t)
	flatTypes.Store(t, m)
	return m, m != nil
}

var (
	jsonUnmarshaler   = reflect.TypeFor[json.Unmarshaler]()
	jsonv2Unmarshaler = reflect.TypeFor[jsonv2.Unmarshaler]()
	textUnmarshaler   = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// flatFields lists t's fields by the name the general decoder matches
// (the json tag's, else the Go name), or returns nil if t is not a struct
// of such fields only (an embedded or nested struct, a tag option that
// changes decoding, a type that decodes itself).
func flatFields(t reflect.Type) map[string]flatField {
	if t.Kind() != reflect.Struct {
		return nil
	}
	m := make(map[string]flatField, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts := tag, ""
		for j := range len(tag) {
			if tag[j] == ',' {
				name, opts = tag[:j], tag[j+1:]
				break
			}
		}
		if opts != "" && opts != "omitempty" && opts != "omitzero" {
			return nil
		}
		if name == "" {
			name = sf.Name
		}
		if sf.Anonymous || sf.Tag.Get("jsonv2") != "" {
			return nil
		}
		ft, ptr := sf.Type, false
		if ft.Kind() == reflect.Pointer {
			ft, ptr = ft.Elem(), true
		}
		for _, u := range []reflect.Type{jsonUnmarshaler, jsonv2Unmarshaler, textUnmarshaler} {
			if ft.Implements(u) || reflect.PointerTo(ft).Implements(u) {
				return nil
			}
		}
		f := flatField{index: i, kind: ft.Kind(), ptr: ptr}
		switch {
		case f.kind == reflect.String:
		case ptr:
			return nil
		case f.kind == reflect.Bool:
		case f.kind >= reflect.Int && f.kind <= reflect.Uint64:
		default:
			return nil
		}
		if _, dup := m[name]; dup {
			return nil
		}
		m[name] = f
	}
	return m
}
