package client

import (
	"context"
	"io"

	"github.com/orion-agent/orion/internal/jsonrpc"
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
//
// Up to StreamWindow appends are in flight: the next chunk is read, encoded
// and sent, and the daemon reads and decodes it, while the one before is
// being journaled (each append of a session is still journaled in order,
// after the one before). For input that is all there, such as a file, that
// overlaps the work on both sides with the daemon's fsyncs. On an error the
// appends after the failed one are refused by the daemon (a gap), and the
// first error is returned.
func (c *Client) Stream(ctx context.Context, id string, r io.Reader, opts StreamOptions) (protocol.AppendResult, uint64, error) {
	size := opts.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	seq := opts.FirstSeq
	if seq == 0 {
		seq = 1
	}
	type inflight struct {
		call  *jsonrpc.Call
		bytes int
	}
	var (
		last     protocol.AppendResult
		sent     int64
		chunks   uint64
		pending  []inflight
		firstErr error
		// enc holds each chunk's params, encoded, until its request is
		// written; the next chunk reuses it.
		enc []byte
	)
	// settle waits for the oldest append in flight. After a failure the
	// replies still due are read but not counted: the appends after a
	// refused one are refused as a gap.
	settle := func() {
		p := pending[0]
		pending = pending[1:]
		defer p.call.Release()
		var ack protocol.AppendResult
		b, err := p.call.Wait(ctx)
		if err != nil {
			err = protocolError(err)
		} else {
			ack, err = readAppendResult(b, id)
		}
		if firstErr != nil {
			return
		}
		if err != nil {
			firstErr = err
			return
		}
		last = ack
		chunks++
		sent += int64(p.bytes)
		if opts.Progress != nil {
			opts.Progress(sent)
		}
	}
	err := protocol.SplitChunks(r, size, func(chunk []byte) error {
		if len(pending) == StreamWindow {
			settle()
		}
		if firstErr != nil {
			return firstErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Send returns once the request is written: neither the chunk
		// nor its params need be held while its reply is awaited.
		k := c.codec.NewCall()
		if err := c.sendChunk(ctx, k, &enc, id, seq, chunk); err != nil {
			k.Release()
			return err
		}
		pending = append(pending, inflight{call: k, bytes: len(chunk)})
		seq++
		return nil
	})
	for len(pending) > 0 {
		settle()
	}
	if firstErr != nil {
		err = firstErr
	}
	return last, chunks, err
}

// StreamWindow is how many appends Stream keeps in flight: while the daemon
// journals some, it reads and decodes the next, and the client encodes the
// one after; the daemon queues a session's chunks for its journal while the
// one before syncs, so the chunks it read meanwhile share the next sync,
// and the slower the disk's sync, the more of them do. In 1 MiB chunks
// (orionctl write) that is at most 8 MiB in flight, held by the daemon
// (within its per-connection bound) and not by the client, which encodes
// each chunk into the same buffer.
const StreamWindow = 8

// CharBoundary returns the largest n <= len(b) such that b[:n] does not end
// inside a UTF-8 character; see protocol.CharBoundary.
func CharBoundary(b []byte) int { return protocol.CharBoundary(b) }
