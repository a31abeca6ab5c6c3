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

// MaxWholeFileChunk bounds the chunks of a whole-file write: each chunk is
// one commit, so larger chunks write a large file faster (measured: a 50 MB
// file at ~40 MB/s in 64 KiB chunks, ~93 MB/s in 1 MiB ones), while a chunk
// is held whole in memory on both sides.
const MaxWholeFileChunk = 1 << 20

// WholeFileChunkSize is the chunk size for writing input that is all there
// (a file, not a model's stream): the daemon's largest chunk, at most
// MaxWholeFileChunk, or DefaultChunkSize if the daemon does not say.
func (c *Client) WholeFileChunkSize(ctx context.Context) int {
	st, err := c.Status(ctx)
	if err != nil || st.MaxChunkBytes <= 0 {
		return DefaultChunkSize
	}
	return int(min(st.MaxChunkBytes, MaxWholeFileChunk))
}

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
