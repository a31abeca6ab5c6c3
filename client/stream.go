package client

import (
	"context"
	"io"

	"github.com/orion-agent/orion/protocol"
)

// DefaultChunkSize is the chunk size Stream uses when none is given: large
// enough that a commit per chunk is cheap per byte, far under the daemon's
// 1 MiB chunk limit.
const DefaultChunkSize = 64 << 10

// StreamOptions configure Stream.
type StreamOptions struct {
	// ChunkSize is the most bytes per chunk; 0 means DefaultChunkSize.
	ChunkSize int
	// FirstSeq is the seq of the first chunk sent; 0 means 1.
	FirstSeq uint64
	// Progress, if set, is called after every acknowledged chunk with the
	// number of input bytes sent so far.
	Progress func(sent int64)
}

// Stream reads r to the end and appends it to session id in chunks, each
// cut on a UTF-8 character boundary so no chunk carries half a character.
// It returns the last acknowledgement and the number of chunks sent.
func (c *Client) Stream(ctx context.Context, id string, r io.Reader, opts StreamOptions) (protocol.AppendResult, uint64, error) {
	size := opts.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	seq := opts.FirstSeq
	if seq == 0 {
		seq = 1
	}
	var (
		last   protocol.AppendResult
		sent   int64
		chunks uint64
	)
	err := protocol.SplitChunks(r, size, func(chunk []byte) error {
		ack, err := c.Append(ctx, protocol.AppendParams{SessionID: id, Seq: seq, Chunk: string(chunk)})
		if err != nil {
			return err
		}
		last = ack
		seq++
		chunks++
		sent += int64(len(chunk))
		if opts.Progress != nil {
			opts.Progress(sent)
		}
		return nil
	})
	return last, chunks, err
}

// CharBoundary returns the largest n <= len(b) such that b[:n] does not end
// inside a UTF-8 character; see protocol.CharBoundary.
func CharBoundary(b []byte) int { return protocol.CharBoundary(b) }
