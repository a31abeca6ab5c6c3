package client

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/orion-agent/orion/protocol"
)

// readAppendResult reads an append's reply: by decodeAppendResult, or by
// encoding/json when it is not as the daemon writes it. (A function of
// its own, so that the result's escape to encoding/json does not move the
// common case's to the heap.)
func readAppendResult(b []byte, id string) (protocol.AppendResult, error) {
	var r protocol.AppendResult
	if decodeAppendResult(b, &r, id) {
		return r, nil
	}
	return unmarshalAppendResult(b)
}

func unmarshalAppendResult(b []byte) (protocol.AppendResult, error) {
	var r protocol.AppendResult
	err := json.Unmarshal(b, &r)
	return r, err
}

// decodeAppendResult reads an append's reply as the daemon writes it: its
// members in encoding/json's order, duplicate and trailing_bytes only when
// set, strings with nothing escaped. It reports false for anything else,
// which encoding/json then reads. An append's reply is decoded as often as
// appends are made, and encoding/json's reflection was a tenth of the
// client's CPU per append. id is the session id the append named: the
// reply's, when the same, is not allocated again.
func decodeAppendResult(b []byte, r *protocol.AppendResult, id string) bool {
	var out protocol.AppendResult
	var ok bool
	if b, ok = cutPrefix(b, `{"session_id":`); !ok {
		return false
	}
	var raw []byte
	if raw, b, ok = plainString(b); !ok {
		return false
	}
	out.SessionID = id
	if string(raw) != id {
		out.SessionID = string(raw)
	}
	if b, ok = cutPrefix(b, `,"seq":`); !ok {
		return false
	}
	if out.Seq, b, ok = decimal(b); !ok {
		return false
	}
	if rest, dup := cutPrefix(b, `,"duplicate":true`); dup {
		out.Duplicate, b = true, rest
	}
	if b, ok = cutPrefix(b, `,"stage":`); !ok {
		return false
	}
	if raw, b, ok = plainString(b); !ok {
		return false
	}
	out.Stage = stageOf(raw)
	var n uint64
	if b, ok = cutPrefix(b, `,"bytes":`); !ok {
		return false
	}
	if n, b, ok = decimal(b); !ok || n > 1<<63-1 {
		return false
	}
	out.Bytes = int64(n)
	if b, ok = cutPrefix(b, `,"lines":`); !ok {
		return false
	}
	if n, b, ok = decimal(b); !ok || n > 1<<63-1 {
		return false
	}
	out.Lines = int64(n)
	switch {
	case bytes.HasPrefix(b, []byte(`,"end_marker_seen":true`)):
		out.EndMarkerSeen, b = true, b[len(`,"end_marker_seen":true`):]
	case bytes.HasPrefix(b, []byte(`,"end_marker_seen":false`)):
		b = b[len(`,"end_marker_seen":false`):]
	default:
		return false
	}
	if rest, trailing := cutPrefix(b, `,"trailing_bytes":`); trailing {
		if n, b, ok = decimal(rest); !ok || n == 0 || n > 1<<63-1 {
			return false
		}
		out.TrailingBytes = int64(n)
	}
	if string(b) != "}" {
		return false
	}
	*r = out
	return true
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// plainString reads a JSON string holding printable ASCII and nothing
// escaped (the daemon's ids and stage names) and returns its text, a
// slice of b.
func plainString(b []byte) ([]byte, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, b, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return b[1:i], b[i+1:], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, b, false
		}
	}
	return nil, b, false
}

// stageOf is the stage named name: one of protocol.Stages, not allocated
// again, or a stage this client does not know.
func stageOf(name []byte) protocol.Stage {
	for _, s := range protocol.Stages {
		if string(s) == string(name) {
			return s
		}
	}
	return protocol.Stage(name)
}

// decimal reads a JSON number written as a plain decimal integer, no sign,
// no leading zero, that fits a uint64.
func decimal(b []byte) (uint64, []byte, bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && b[0] == '0') {
		return 0, b, false
	}
	v, err := strconv.ParseUint(string(b[:n]), 10, 64)
	if err != nil {
		return 0, b, false
	}
	return v, b[n:], true
}
