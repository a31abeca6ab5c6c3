package jsonrpc

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

// message is the part of a JSON-RPC request the stream checks and keeps.
type message struct {
	// id is the id as sent, nil for a notification.
	id     json.RawMessage
	method string
	// params is nil when absent or null.
	params json.RawMessage
	// long is the longest string value in params, as the frame's pass
	// found it; zero when not known.
	long LongString
}

// LongString is the longest string value inside a request's params (a
// member's value, or an element's, at any depth; not a member's name), as
// the stream's one pass over the frame found it: that pass must find where
// the string ends anyway, and checks its text on the way (jsonstr.Scan), so
// that a decoder that meets the string at the same place need not read it
// again. An append's chunk is nearly all of its frame.
type LongString struct {
	// JSON is the string as sent, quotes included: a slice of the params,
	// so a decoder knows it by the address of its first byte.
	JSON []byte
	jsonstr.Scanned
}

// At reports whether l is the string whose JSON starts at b[0]. Only
// then does what l says hold for b.
func (l LongString) At(b []byte) bool {
	return len(l.JSON) > 0 && len(b) >= len(l.JSON) && &b[0] == &l.JSON[0]
}

// note keeps s, a string value of sc's JSON, if it is the longest yet.
func (l *LongString) note(s []byte, sc jsonstr.Scanned) {
	if l != nil && len(s) > len(l.JSON) {
		*l = LongString{JSON: s, Scanned: sc}
	}
}

// parseMessage checks body against JSON-RPC 2.0's request object. On
// failure the returned message's id is what the error reply should carry:
// the request's id where one could be read, else nil (JSON null).
func parseMessage(body []byte) (message, *protocol.Error) {
	var msg message
	// Room for the members of a request on the stack: four, and a few
	// unknown ones, before readMembers has to grow it.
	var room [8]member
	fields, ok := readMembersInto(room[:0], body)
	if !ok {
		if !jsontext.Value(body).IsValid(jsonOptions...) {
			return msg, protocol.Errorf(protocol.CodeParseError, protocol.ReasonInvalidJSON,
				"parse error: the message is not valid JSON")
		}
		if bytes.TrimLeft(body, " \t\r\n")[0] == '[' {
			return msg, protocol.Errorf(protocol.CodeInvalidRequest, protocol.ReasonBatchNotSupported,
				"invalid request: batches (JSON arrays) are not supported by this daemon; send each request as its own message")
		}
		return msg, invalidRequest("a request must be a JSON object")
	}
	// The id is checked first, so that the other refusals can carry it and
	// the client's pending call does not wait forever.
	if id := fields.get("id"); id != nil {
		switch {
		case len(id) > maxIDBytes:
			return msg, invalidRequest("the id is %d bytes long; use a number or a string of at most %d bytes", len(id), maxIDBytes)
		case id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'):
			// A part of body: the stream copies what it keeps until the
			// reply is written (newPending), as the frame's buffer is
			// read into again.
			msg.id = id
		case string(id) == "null":
			return msg, invalidRequest(`"id": null is not supported; give a number or a string, or leave id out for a notification`)
		default:
			return msg, invalidRequest("the id must be a number or a string")
		}
	}
	if fields.get("result") != nil || fields.get("error") != nil {
		// A response: this daemon sends no requests, so there is nothing it
		// answers; its id is the client's own and must not be echoed as if
		// it were a request of ours.
		msg.id = nil
		return msg, invalidRequest("this daemon sends no requests, so it takes no responses; a request has a method")
	}
	if string(fields.get("jsonrpc")) != `"2.0"` {
		return msg, invalidRequest(`"jsonrpc" must be "2.0"`)
	}
	m := fields.get("method")
	if m == nil {
		return msg, invalidRequest("the method is missing")
	}
	if m[0] != '"' {
		return msg, invalidRequest("the method must be a string")
	}
	var unq [64]byte
	method, err := jsontext.AppendUnquote(unq[:0], m)
	if err != nil {
		return msg, invalidRequest("the method is not valid UTF-8")
	}
	msg.method = methodName(method)
	if p := fields.getMember("params"); p.value != nil && string(p.value) != "null" {
		msg.params, msg.long = p.value, p.long
	}
	return msg, nil
}

// jsonOptions read JSON as encoding/json does: a repeated member's last
// value wins, and text that is not valid Unicode is read (then refused with
// its own code, invalid_utf8, where the daemon checks the params).
var jsonOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// member is one member of a JSON object, its name and value as sent.
type member struct {
	// name is the name as a JSON string, quotes and escapes included.
	name  []byte
	value json.RawMessage
	// long is the longest string in value, where scanMembers read it.
	long LongString
}

// is reports whether m is called name.
func (m member) is(name string) bool {
	raw := m.name
	if bytes.IndexByte(raw, '\\') < 0 {
		return len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name
	}
	// An escaped name ("\u0069d" is "id" to encoding/json, and so to
	// jsonrpc2): rare, so unquoted only then.
	unq, err := jsontext.AppendUnquote(nil, raw)
	return err == nil && string(unq) == name
}

// members are a JSON object's members in the order sent.
type members []member

// get returns the value of the member called name, nil when absent. Of a
// repeated name the last value counts, as encoding/json (and so jsonrpc2)
// reads it.
func (ms members) get(name string) json.RawMessage {
	return ms.getMember(name).value
}

// getMember is get, returning the whole member (zero when absent).
func (ms members) getMember(name string) member {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].is(name) {
			return ms[i]
		}
	}
	return member{}
}

// decoders reuse the decoders of readMembers: one is read for every
// request and every reply, and a new one costs more than the small
// messages it reads.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(noInput, jsonOptions...) }}

// noInput is what a pooled decoder reads while unused: nothing, and no
// longer the last message it read.
var noInput = new(bytes.Buffer)

// knownMethods are the daemon's method names, each one string that every
// request naming it shares.
var knownMethods = func() map[string]string {
	m := make(map[string]string, len(protocol.Methods)+1)
	for _, name := range append([]string{protocol.CancelRequest}, protocol.Methods...) {
		m[name] = name
	}
	return m
}()

// methodName is name as a string: one of the daemon's own method names
// without a copy, any other copied.
func methodName(name []byte) string {
	if s, ok := knownMethods[string(name)]; ok {
		return s
	}
	return string(name)
}

// readMembers reads body as one JSON object in a single validating pass
// (the chunk of an append is most of a request: encoding/json's Valid and
// then Unmarshal into a map read it twice more). It returns false when
// body is not valid JSON or not an object. Names and values alias body.
func readMembers(body []byte) (members, bool) {
	return readMembersInto(make(members, 0, 4), body)
}

// readMembersInto is readMembers appending to ms, whose room the caller
// may have on its stack.
func readMembersInto(ms members, body []byte) (members, bool) {
	if ms, ok := scanMembers(ms, body); ok {
		return ms, true
	}
	return decodeMembers(ms[:0], body)
}

// decodeMembers is readMembers by jsontext, which also tells what is wrong
// with a body scanMembers does not take.
func decodeMembers(ms members, body []byte) (members, bool) {
	dec := decoders.Get().(*jsontext.Decoder)
	// Over a bytes.Buffer the decoder parses body in place, so values
	// alias it and nothing is copied.
	dec.Reset(bytes.NewBuffer(body), jsonOptions...)
	defer func() {
		dec.Reset(noInput, jsonOptions...)
		decoders.Put(dec)
	}()
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		value, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		ms = append(ms, member{name: name, value: json.RawMessage(value)})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return ms, true
}

// scanMembers is readMembers for the bodies nearly every client sends: it
// checks them as jsontext does (invalid UTF-8 allowed, repeated names
// allowed) in a pass that passes over a string's ordinary bytes eight at a
// time (jsonstr.Skip), where jsontext looks at each byte: an append's chunk
// is nearly all of its frame, and this pass, the frame's first, cost as
// much as decoding the chunk. It returns false for anything it does not
// take, valid or not (values nested deeper than maxScanDepth); readMembers
// then asks jsontext.
func scanMembers(ms members, body []byte) (members, bool) {
	i := jsonstr.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	i = jsonstr.SkipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return ms, jsonstr.SkipSpace(body, i+1) == len(body)
	}
	for {
		n, ok := jsonstr.Skip(body[i:])
		if !ok {
			return nil, false
		}
		name := body[i : i+n]
		i = jsonstr.SkipSpace(body, i+n)
		if i >= len(body) || body[i] != ':' {
			return nil, false
		}
		i = jsonstr.SkipSpace(body, i+1)
		var long LongString
		if n, ok = skipValue(body[i:], 1, &long); !ok {
			return nil, false
		}
		ms = append(ms, member{name: name, value: json.RawMessage(body[i : i+n]), long: long})
		i = jsonstr.SkipSpace(body, i+n)
		if i >= len(body) {
			return nil, false
		}
		switch body[i] {
		case ',':
			i = jsonstr.SkipSpace(body, i+1)
		case '}':
			return ms, jsonstr.SkipSpace(body, i+1) == len(body)
		default:
			return nil, false
		}
	}
}

// maxScanDepth bounds how deeply scanMembers follows nested values (the
// member values are at depth 1); deeper ones are left to jsontext, whose
// own limit then applies.
const maxScanDepth = 32

// skipValue returns the length of the JSON value at the start of b, and
// notes in long its longest string.
func skipValue(b []byte, depth int, long *LongString) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch c := b[0]; {
	case c == '"':
		n, sc, ok := jsonstr.Scan(b)
		if ok {
			long.note(b[:n], sc)
		}
		return n, ok
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return 0, false
		}
		return skipComposite(b, depth+1, long)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b)
	case c == 't':
		return literal(b, "true")
	case c == 'f':
		return literal(b, "false")
	case c == 'n':
		return literal(b, "null")
	}
	return 0, false
}

// skipComposite returns the length of the object or array at the start of
// b, and notes in long its longest string.
func skipComposite(b []byte, depth int, long *LongString) (int, bool) {
	object := b[0] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	i := jsonstr.SkipSpace(b, 1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		if object {
			n, ok := jsonstr.Skip(b[i:])
			if !ok {
				return 0, false
			}
			i = jsonstr.SkipSpace(b, i+n)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = jsonstr.SkipSpace(b, i+1)
		}
		n, ok := skipValue(b[i:], depth, long)
		if !ok {
			return 0, false
		}
		i = jsonstr.SkipSpace(b, i+n)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = jsonstr.SkipSpace(b, i+1)
		case end:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// skipNumber returns the length of the JSON number at the start of b.
func skipNumber(b []byte) (int, bool) {
	i := 0
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	return i, true
}

func literal(b []byte, lit string) (int, bool) {
	if len(b) < len(lit) || string(b[:len(lit)]) != lit {
		return 0, false
	}
	return len(lit), true
}

func invalidRequest(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidRequest, protocol.ReasonInvalidRequest, "invalid request: "+format, args...)
}

// errorReply is a reply the stream writes itself, for a message the
// handler never sees.
type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *protocol.Error `json:"error"`
}

// EncodeErrorReply is the frame body of an error reply to the request of
// id, as sent (nil: null), for a message no handler saw.
func EncodeErrorReply(id json.RawMessage, e *protocol.Error) ([]byte, error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	return json.Marshal(errorReply{JSONRPC: "2.0", ID: id, Error: e})
}
