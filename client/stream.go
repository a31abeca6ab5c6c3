package client

import (
	"context"
	"errors"
	"io"
	"unicode/utf8"

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
	// A chunk must be able to hold a whole character, or cutting on
	// character boundaries could never make progress.
	size = max(size, utf8.UTFMax)
	seq := opts.FirstSeq
	if seq == 0 {
		seq = 1
	}
	var (
		last    protocol.AppendResult
		sent    int64
		chunks  uint64
		buf     = make([]byte, size)
		carried int
	)
	for {
		n, readErr := io.ReadFull(r, buf[carried:])
		n += carried
		eof := errors.Is(readErr, io.EOF) || errors.Is(readErr, io.ErrUnexpectedEOF)
		if readErr != nil && !eof {
			return last, chunks, readErr
		}
		cut := n
		if !eof {
			cut = CharBoundary(buf[:n])
		}
		if cut > 0 {
			ack, err := c.Append(ctx, protocol.AppendParams{SessionID: id, Seq: seq, Chunk: string(buf[:cut])})
			if err != nil {
				return last, chunks, err
			}
			last = ack
			seq++
			chunks++
			sent += int64(cut)
			if opts.Progress != nil {
				opts.Progress(sent)
			}
		}
		carried = copy(buf, buf[cut:n])
		if eof {
			return last, chunks, nil
		}
	}
}

// CharBoundary returns the largest n <= len(b) such that b[:n] does not end
// inside a UTF-8 character. Bytes that are not valid UTF-8 at all are not
// held back: they can never become a character, and holding them would stall.
func CharBoundary(b []byte) int {
	// A UTF-8 character is at most 4 bytes, so only the last 3 can belong
	// to an incomplete one.
	for back := 1; back <= utf8.UTFMax-1 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < utf8.RuneSelf {
			return len(b)
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-back:]) {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}
