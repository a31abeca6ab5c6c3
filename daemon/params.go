package daemon

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/orion-agent/orion/internal/jsonrpc"
	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

// paramsChecker is implemented by every params type whose fields have
// limits (protocol/limits.go).
type paramsChecker interface {
	Check() error
}

// appendWire is session.append's params with the chunk as a pointer: null
// and absent decode to nil, which a plain string cannot tell from "".
type appendWire struct {
	protocol.AppendParams
	Chunk *string `json:"chunk"`
}

// appendParams is session.append's decoder in the method table: decodeAppend,
// then the limits of the params.
func appendParams(raw json.RawMessage, long jsonrpc.LongString, room *requestRoom) (*protocol.AppendParams, error) {
	p, err := decodeAppendInto(raw, long, room)
	if err != nil {
		return nil, malformedParams(protocol.MethodSessionAppend, err)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeAppend decodes session.append's params, refusing a null or absent
// chunk, which a plain string would take as an empty chunk that uses up a
// seq, and text that is not valid Unicode (invalid_utf8).
//
// It is the one method whose params are large, so it is read with the
// faster decoder of encoding/json/v2 (github.com/go-json-experiment/json),
// set to read as encoding/json does otherwise: names matched without regard
// to case and a repeated member's last value wins. That decoder checks
// UTF-8 and surrogate escapes as it reads, so valid params (nearly all) are
// read in one pass; only params it refuses are read again, permissively, to
// tell text that is not Unicode from malformed params.
//
// raw is the request's own: the chunk is unquoted in place (decodeAppendFast).
// long is what the frame reader learned of raw's longest string, the chunk
// as clients send it.
func decodeAppend(raw []byte, long jsonrpc.LongString) (*protocol.AppendParams, error) {
	return decodeAppendInto(raw, long, nil)
}

// decodeAppendInto is decodeAppend decoding into room's params, where room
// is not nil, with the session id the connection named last when it is
// the same again: an append then allocates neither.
func decodeAppendInto(raw []byte, long jsonrpc.LongString, room *requestRoom) (*protocol.AppendParams, error) {
	return decodeAppendContent(raw, long, nil, room)
}

// decodeAppendContent is decodeAppendInto of params whose chunk was sent
// raw, as content, when content is not nil (appendRawParams).
func decodeAppendContent(raw []byte, long jsonrpc.LongString, content []byte, room *requestRoom) (*protocol.AppendParams, error) {
	if p, ok, err := decodeAppendFastContent(raw, long, content, room); ok {
		if err == nil && room != nil && room.lastSession != nil {
			*room.lastSession = p.SessionID
		}
		return p, err
	}
	return decodeAppendGeneralContent(raw, content)
}

// appendRawParams is session.append's decoder in the method table for a
// frame that carried the chunk raw (protocol.HeaderRawLength): the params'
// JSON without a chunk, then the chunk itself, which is used where it was
// read, in the frame's buffer, with no pass over it but the check that it
// is valid UTF-8, the rule a chunk sent as a JSON string obeys too.
func appendRawParams(raw json.RawMessage, content []byte, room *requestRoom) (*protocol.AppendParams, error) {
	p, err := decodeAppendContent(raw, jsonrpc.LongString{}, content, room)
	if err != nil {
		return nil, malformedParams(protocol.MethodSessionAppend, err)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}

// requestRoom is memory of a request's own (its served) where its params
// are decoded, when its method's decoder can (decodeWith), and its result
// kept (keepsIn): an append's cost no allocation of their own.
type requestRoom struct {
	appendParams protocol.AppendParams
	appendResult protocol.AppendResult
	// lastSession, when set, is the session id the connection's last
	// append named: the next one, usually of the same session, shares it.
	// It belongs to the connection's read loop, where params are decoded.
	lastSession *string
}

// decodeAppendGeneral is decodeAppend by the general decoder, for params
// decodeAppendFast leaves to it.
func decodeAppendGeneral(raw []byte) (*protocol.AppendParams, error) {
	return decodeAppendGeneralContent(raw, nil)
}

// decodeAppendGeneralContent is decodeAppendGeneral of params whose chunk
// was sent raw, as content, when content is not nil.
func decodeAppendGeneralContent(raw, content []byte) (*protocol.AppendParams, error) {
	var w appendWire
	if err := jsonv2.Unmarshal(raw, &w, appendOptions); err != nil {
		w = appendWire{}
		if jsonv2.Unmarshal(raw, &w, appendOptions, jsontext.AllowInvalidUTF8(true)) != nil {
			return nil, err
		}
		if w.Chunk != nil {
			w.AppendParams.Chunk = *w.Chunk
		}
		return nil, errInvalidText(protocol.MethodSessionAppend, &w.AppendParams)
	}
	p := &w.AppendParams
	if content != nil {
		if w.Chunk != nil {
			return nil, errContentTwice(protocol.MethodSessionAppend, "chunk", p.SessionID)
		}
		return withRawChunk(p, content)
	}
	if w.Chunk == nil {
		e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonMissingField,
			"chunk is required: send the next piece of content as a string (\"\" for none)")
		e.Data.Field, e.Data.SessionID = "chunk", p.SessionID
		return nil, e
	}
	p.Chunk = *w.Chunk
	return p, nil
}

// decodeAppendFast reads the params of an append as clients send them
// (session_id, seq and chunk, each once and spelled so, and nothing else).
// It reads their shape first, skipping over the chunk, then unquotes the
// chunk in place, in raw: its text is never longer than its JSON, and
// writing it over the JSON it was read from saves the chunk a buffer of its
// own, a third of the garbage an append made. The general decoder read the
// chunk three times (checked, unquoted, copied into a string) after the
// frame reader's own pass, 46% of the daemon's CPU in a large file's write.
//
// Where long, from the frame reader, is the chunk, the frame reader's pass
// is the only one that checked it: the shape is read past it without a
// look, and its text is written over its JSON without a check
// (jsonstr.Unescape), or, holding no escape, is its JSON between the
// quotes, with no pass at all.
//
// It returns false for anything else, valid or not (other spellings, other
// members, a repeated one, a seq in another form, a session id that is not
// text), with raw untouched: the general decoder then reads those params as
// before, with its errors. A chunk that is not valid Unicode is found only
// once raw is being overwritten (or, checked by the frame reader, before):
// that is answered here, as the general decoder answers it
// (errInvalidText).
func decodeAppendFast(raw []byte, long jsonrpc.LongString) (p *protocol.AppendParams, ok bool, err error) {
	return decodeAppendFastInto(raw, long, nil)
}

// decodeAppendFastInto is decodeAppendFast into room (decodeAppendInto).
func decodeAppendFastInto(raw []byte, long jsonrpc.LongString, room *requestRoom) (p *protocol.AppendParams, ok bool, err error) {
	return decodeAppendFastContent(raw, long, nil, room)
}

// decodeAppendFastContent is decodeAppendFastInto of params whose chunk was
// sent raw, as content, when content is not nil: their JSON then holds no
// chunk (a chunk there is refused, content_sent_twice).
func decodeAppendFastContent(raw []byte, long jsonrpc.LongString, content []byte, room *requestRoom) (p *protocol.AppendParams, ok bool, err error) {
	var params *protocol.AppendParams
	if room != nil {
		params = &room.appendParams
		*params = protocol.AppendParams{}
	} else {
		params = new(protocol.AppendParams)
	}
	var (
		haveID, haveSeq   bool
		chunkAt, chunkLen = -1, 0
		scanned           bool
	)
	i := jsonstr.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false, nil
	}
	i = jsonstr.SkipSpace(raw, i+1)
	if content != nil && i < len(raw) && raw[i] == '}' {
		// No member at all: the general decoder says which is missing.
		return nil, false, nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			if i >= len(raw) || raw[i] != ',' {
				break
			}
			i = jsonstr.SkipSpace(raw, i+1)
		}
		var name string
		switch {
		case hasName(raw[i:], `"session_id"`) && !haveID:
			name, haveID = "session_id", true
		case hasName(raw[i:], `"seq"`) && !haveSeq:
			name, haveSeq = "seq", true
		case hasName(raw[i:], `"chunk"`) && chunkAt < 0:
			name = "chunk"
		default:
			return nil, false, nil
		}
		i = jsonstr.SkipSpace(raw, i+len(name)+2)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false, nil
		}
		i = jsonstr.SkipSpace(raw, i+1)
		var k int
		switch name {
		case "session_id":
			// Unquoted on the stack (ids are short), then copied once
			// into the string that outlives raw, unless the
			// connection's last append named it already.
			var idRoom [64]byte
			var id []byte
			if id, k, ok = jsonstr.Unquote(idRoom[:0], raw[i:]); !ok {
				return nil, false, nil
			}
			params.SessionID = sessionIDOf(id, room)
		case "seq":
			if params.Seq, k, ok = readUint(raw[i:]); !ok {
				return nil, false, nil
			}
		case "chunk":
			if scanned = long.At(raw[i:]); scanned {
				k = len(long.JSON)
			} else if k, ok = jsonstr.Skip(raw[i:]); !ok {
				return nil, false, nil
			}
			chunkAt, chunkLen = i, k
		}
		i = jsonstr.SkipSpace(raw, i+k)
	}
	if i >= len(raw) || raw[i] != '}' || jsonstr.SkipSpace(raw, i+1) != len(raw) || !haveID || !haveSeq {
		return nil, false, nil
	}
	if content != nil {
		if chunkAt >= 0 {
			return nil, true, errContentTwice(protocol.MethodSessionAppend, "chunk", params.SessionID)
		}
		p, err := withRawChunk(params, content)
		return p, true, err
	}
	if chunkAt < 0 {
		return nil, false, nil
	}
	// From here on raw is overwritten: the chunk's text is written over
	// its JSON from the first byte of it, never past what is read.
	src := raw[chunkAt : chunkAt+chunkLen]
	var chunk []byte
	switch {
	case scanned && !long.Valid:
		// What Unquote would refuse, and raw is left as it is.
		return nil, true, errInvalidChunk(protocol.MethodSessionAppend, params.SessionID, params.Seq)
	case scanned && !long.Escaped:
		chunk = src[1 : len(src)-1]
	case scanned:
		// Written from the first byte of text on: what comes before the
		// first escape stays where it is.
		chunk = jsonstr.Unescape(src[1:1], src)
	default:
		if chunk, _, ok = jsonstr.Unquote(src[:0], src); !ok {
			return nil, true, errInvalidChunk(protocol.MethodSessionAppend, params.SessionID, params.Seq)
		}
	}
	// The string shares raw, the request's own, which nothing writes to
	// again.
	params.Chunk = unsafe.String(unsafe.SliceData(chunk), len(chunk))
	return params, true, nil
}

// withRawChunk gives p the chunk sent raw, content, which it shares: the
// frame's buffer, which nothing writes to until the request is served. It
// refuses content that is not valid UTF-8, as a chunk sent as a JSON string
// is refused (errInvalidChunk).
func withRawChunk(p *protocol.AppendParams, content []byte) (*protocol.AppendParams, error) {
	if !utf8.Valid(content) {
		return nil, errInvalidChunk(protocol.MethodSessionAppend, p.SessionID, p.Seq)
	}
	p.Chunk = unsafe.String(unsafe.SliceData(content), len(content))
	return p, nil
}

// errContentTwice refuses params whose field was sent raw and in their
// JSON as well.
func errContentTwice(method, field, sessionID string) *protocol.Error {
	e := protocol.Errorf(protocol.CodeInvalidParams, protocol.ReasonContentSentTwice,
		"%s was sent raw after the JSON (%s) and in the params too; send it one way: leave it out of the params when it is sent raw",
		field, protocol.HeaderRawLength)
	e.Data.Method, e.Data.Field, e.Data.SessionID = method, field, sessionID
	return e
}

// sessionIDOf is id as a string: the connection's last one (room's) when
// it is the same, without a copy.
func sessionIDOf(id []byte, room *requestRoom) string {
	if room != nil && room.lastSession != nil && *room.lastSession == string(id) {
		return *room.lastSession
	}
	return string(id)
}

// hasName reports whether b starts with the JSON string name as written.
func hasName(b []byte, name string) bool {
	return len(b) >= len(name) && string(b[:len(name)]) == name
}

// readUint reads a JSON number at the start of b written as a plain
// decimal integer without a leading zero that fits a uint64, and how many
// bytes it took; other numbers are left to the general decoder.
func readUint(b []byte) (uint64, int, bool) {
	var v uint64
	n := 0
	for ; n < len(b) && b[n] >= '0' && b[n] <= '9'; n++ {
		d := uint64(b[n] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, 0, false
		}
		v = v*10 + d
	}
	if n == 0 || (n > 1 && b[0] == '0') || (n < len(b) && (b[n] == '.' || b[n] == 'e' || b[n] == 'E')) {
		return 0, 0, false
	}
	return v, n, true
}

// fastParams is the decoder in the method table of a method whose params
// may be large (session.write carries a whole file): the params read once by
// the faster decoder, as decodeAppend reads session.append's, then their
// limits. encoding/json took 12% of session.write's CPU at 64 KiB, and read
// the content twice (once to decode, once to check its text).
func fastParams[P any](method string) func(json.RawMessage, jsonrpc.LongString, *requestRoom) (*P, error) {
	return func(raw json.RawMessage, _ jsonrpc.LongString, _ *requestRoom) (*P, error) {
		v := new(P)
		if err := jsonv2.Unmarshal(raw, v, fastOptions); err != nil {
			// Read again, permissively, only to tell text that is not
			// Unicode from params that are malformed.
			if jsonv2.Unmarshal(raw, new(P), appendOptions, jsontext.AllowInvalidUTF8(true)) == nil {
				return nil, errInvalidText(method, v)
			}
			return nil, malformedParams(method, err)
		}
		if c, ok := any(v).(paramsChecker); ok {
			if err := c.Check(); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

// writeWire is session.write's params with the content as a pointer, to
// tell a content present in the JSON (even "") from one left out.
type writeWire struct {
	protocol.WriteParams
	Content *string `json:"content"`
}

// writeRawParams is session.write's decoder in the method table for a
// frame that carried the content raw (protocol.HeaderRawLength): the
// params' JSON without it, read as fastParams reads them, then the content,
// checked as valid UTF-8 and copied once into a string of its own: the
// engine may hold a file's content past the handler's return (its file is
// written while the journal syncs), and the frame's buffer is read into
// again then. The copy is a pass that the JSON form's unquoting made too,
// without its scan and its escapes.
func writeRawParams(raw json.RawMessage, content []byte, _ *requestRoom) (*protocol.WriteParams, error) {
	const method = protocol.MethodSessionWrite
	var w writeWire
	if err := jsonv2.Unmarshal(raw, &w, fastOptions); err != nil {
		if jsonv2.Unmarshal(raw, new(writeWire), appendOptions, jsontext.AllowInvalidUTF8(true)) == nil {
			return nil, errInvalidText(method, &w.WriteParams)
		}
		return nil, malformedParams(method, err)
	}
	if w.Content != nil {
		return nil, errContentTwice(method, "content", "")
	}
	if !utf8.Valid(content) {
		e := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonInvalidUTF8,
			"the content of %s is not valid UTF-8; nothing was done: send text", method)
		e.Data.Method, e.Data.Field = method, "content"
		return nil, e
	}
	p := &w.WriteParams
	p.Content = string(content)
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}

// appendOptions read as encoding/json does: v2's case-insensitive matching
// would also ignore '_' and '-' (so "sessionId" would name session_id), and
// a later null would clear a field where encoding/json keeps it.
var appendOptions = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsonv1.MergeWithLegacySemantics(true),
	jsontext.AllowDuplicateNames(true),
)

// fastOptions are appendOptions with each string read by unquoteString.
var fastOptions = jsonv2.JoinOptions(appendOptions,
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(unquoteString)))

// unquoteString reads a JSON string value into s with one allocation, the
// string's own: the default decoding unquotes an escaped string into a
// buffer it grows, then copies that into the string, two allocations and
// two copies of a session.write's whole content (64 KiB: 140 KB). The
// string is a new allocation of its own, never the frame's buffer, which a
// later frame reuses while the engine may still hold the content. Anything
// but a string (null, a number where a string belongs) is left to the
// default decoding and its errors.
func unquoteString(dec *jsontext.Decoder, s *string) error {
	if dec.PeekKind() != '"' {
		return errors.ErrUnsupported
	}
	// ReadValue checks the string as the default decoding does (valid
	// UTF-8, no unescaped control character, surrogate escapes in pairs),
	// so Unescape, which checks nothing, reads only valid strings.
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	b := jsonstr.Unescape(make([]byte, 0, len(v)-2), v)
	*s = unsafe.String(unsafe.SliceData(b), len(b))
	return nil
}

// errInvalidText refuses params that are not valid Unicode, naming the chunk
// when that is where the replaced characters are.
func errInvalidText(method string, params any) *protocol.Error {
	if p, ok := params.(*protocol.AppendParams); ok && strings.Contains(p.Chunk, "\uFFFD") {
		return errInvalidChunk(method, p.SessionID, p.Seq)
	}
	e := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonInvalidUTF8,
		"the params of %s are not valid UTF-8 (invalid bytes, or a lone UTF-16 surrogate escape such as \\ud800); "+
			"nothing was done: send text, and split it between characters, not inside one", method)
	e.Data.Method, e.Data.Field = method, "params"
	if p, ok := params.(*protocol.AppendParams); ok {
		e.Data.SessionID = p.SessionID
	}
	return e
}

// errInvalidChunk refuses chunk seq of session id, whose text is not valid
// Unicode.
func errInvalidChunk(method, id string, seq uint64) *protocol.Error {
	e := protocol.Errorf(protocol.CodeValidationFailed, protocol.ReasonInvalidUTF8,
		"chunk %d is not valid UTF-8 (invalid bytes, or a lone UTF-16 surrogate escape such as \\ud800); "+
			"nothing was stored: send text, and split it between characters, not inside one", seq)
	e.Data.Method, e.Data.Field, e.Data.SessionID = method, "chunk", id
	return e
}

// encodeResult is the JSON of a handler's result, as encoding/json writes
// it: an append's by hand (appendResultJSON), the one reply sent thousands
// of times a second, into room, every other by encoding/json.
func encodeResult(room []byte, result any) (json.RawMessage, error) {
	if r, ok := appendResultOf(result); ok {
		return appendResultJSON(room[:0], r), nil
	}
	return json.Marshal(result)
}

// appendResultJSON appends r's JSON to b: the members encoding/json writes,
// in its order, with its omitempty rules, and strings escaped as it escapes
// them (jsonv1's quoting: <, > and & as \u escapes too).
func appendResultJSON(b []byte, r protocol.AppendResult) []byte {
	b = append(b, `{"session_id":`...)
	b = appendString(b, r.SessionID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	if r.Duplicate {
		b = append(b, `,"duplicate":true`...)
	}
	b = append(b, `,"stage":`...)
	b = appendString(b, string(r.Stage))
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, `,"lines":`...)
	b = strconv.AppendInt(b, r.Lines, 10)
	b = append(b, `,"end_marker_seen":`...)
	b = strconv.AppendBool(b, r.EndMarkerSeen)
	if r.TrailingBytes != 0 {
		b = append(b, `,"trailing_bytes":`...)
		b = strconv.AppendInt(b, r.TrailingBytes, 10)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: as is when it holds nothing to
// escape (the daemon's ids and stage names), else as encoding/json quotes
// it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
