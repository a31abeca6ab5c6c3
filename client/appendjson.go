package client

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/orion-agent/orion/internal/jsonstr"
	"github.com/orion-agent/orion/protocol"
)

// appendChunkParams appends session.append's params to dst, encoded as
// encoding/json would, but without escaping <, > and & (the daemon reads
// either) and in one pass. Invalid UTF-8 becomes U+FFFD, as encoding/json
// makes it. A streamer reuses one buffer for every chunk, and a chunk read
// as bytes is not copied into a string first.
func appendChunkParams[S ~[]byte | ~string](dst []byte, id string, seq uint64, chunk S) []byte {
	dst = append(dst, `{"session_id":`...)
	dst = jsonstr.Quote(dst, id)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"chunk":`...)
	dst = jsonstr.Quote(dst, chunk)
	return append(dst, '}')
}

// writeParamsJSON appends session.write's params to dst: begin's small
// fields as encoding/json encodes them, then the content in one pass, as
// appendParams encodes a chunk (sent as it is, it is not marshaled
// again).
func writeParamsJSON(dst []byte, p protocol.WriteParams) ([]byte, error) {
	begin, err := json.Marshal(p.BeginParams)
	if err != nil {
		return nil, err
	}
	b := slices.Grow(dst, len(begin)+len(p.Content)+len(p.Content)/8+16)
	b = append(b, begin[:len(begin)-1]...)
	if len(begin) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"content":`...)
	b = jsonstr.Quote(b, p.Content)
	return append(b, '}'), nil
}
