package client

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/orion-agent/orion/protocol"
)

// appendParamsJSON encodes session.append's params as encoding/json would,
// but without escaping <, > and & (the daemon reads either) and in one pass.
// Invalid UTF-8 becomes U+FFFD, as encoding/json makes it.
func appendParamsJSON(p protocol.AppendParams) []byte {
	// A field added to AppendParams must be added here too: this
	// conversion stops compiling when the struct changes.
	_ = struct {
		SessionID string `json:"session_id"`
		Seq       uint64 `json:"seq"`
		Chunk     string `json:"chunk"`
	}(p)
	b := make([]byte, 0, len(p.Chunk)+len(p.Chunk)/8+len(p.SessionID)+64)
	b = append(b, `{"session_id":`...)
	b, _ = jsontext.AppendQuote(b, p.SessionID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, p.Seq, 10)
	b = append(b, `,"chunk":`...)
	b, _ = jsontext.AppendQuote(b, p.Chunk)
	return append(b, '}')
}
