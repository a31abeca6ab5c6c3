package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/orion-agent/orion/protocol"
)

// Frame limits. A header is a handful of short lines ("Content-Length: N"
// and perhaps "Content-Type: ..."), so these are generous for every client
// and still keep a line that never ends from costing more than a buffer.
const (
	maxHeaderLine  = 1 << 10
	maxHeaderLines = 8
	// maxIDBytes bounds a request id as sent: it is kept until the reply is
	// written, so a megabyte-long string id per in-flight request would
	// otherwise undo the in-flight bound.
	maxIDBytes = 256
	// messageOverhead is what an append's envelope (jsonrpc, id, method,
	// session_id, seq) and the other methods' small params need beside a
	// chunk.
	messageOverhead = 64 << 10
	// chunkEscapeFactor is the most bytes a content byte can take inside a
	// JSON string as clients write it: Go's encoding/json writes <, >, &,
	// control bytes and invalid UTF-8 as six-byte \uXXXX escapes (other Go
	// clients; ours escapes control bytes only), and JSON.stringify does the
	// same for control characters (the Node client).
	chunkEscapeFactor = 6
	// DefaultMaxInflight is how many requests of one connection may be
	// read and not yet answered. Clients keep a few in flight at most (the
	// Go client's Stream three appends, the controllers one per session),
	// so this only slows a client that pipelines far ahead without reading
	// replies.
	DefaultMaxInflight = 64
	// DefaultMaxInflightBytes bounds the same requests by size: each
	// waiting append keeps its chunk decoded, so 64 chunks of 1 MiB
	// pipelined on one connection would hold 64 MiB and, with the garbage
	// collector's headroom, grow the daemon by ~190 MiB. 16 MiB holds 16
	// of the largest chunks, and hundreds of the clients' usual 16-64 KiB.
	DefaultMaxInflightBytes = 16 << 20
)

// MaxMessageBytes is the largest frame (Content-Length) the daemon reads
// for a chunk limit of maxChunk bytes: a chunk of maxChunk bytes that a
// client escaped in full, plus the envelope. Larger frames are refused with
// message_too_large before their body is read, and the connection is
// closed.
func MaxMessageBytes(maxChunk int64) int64 {
	return chunkEscapeFactor*maxChunk + messageOverhead
}

// frameError is a frame the daemon cannot go on reading after: it is
// answered, then the connection closes.
type frameError struct {
	err *protocol.Error
}

func (e *frameError) Error() string { return "reading a frame: " + e.err.Error() }

// readHeader reads one frame's header from r and returns its
// Content-Length, at most limit (readFrameHeader).
func readHeader(r *bufio.Reader, limit int64) (int64, error) {
	h, err := readFrameHeader(r, limit)
	return h.length, err
}

// frameHeader is what a frame's header says of its body.
type frameHeader struct {
	// length is the body's length (Content-Length), raw included.
	length int64
	// raw is how many of the body's last bytes are a request's content
	// sent raw (protocol.HeaderRawLength), -1 when the header is absent.
	raw int64
}

// readFrameHeader reads one frame's header from r: its Content-Length, at
// most limit, and its Orion-Raw-Length, at most the Content-Length. A
// frameError is a frame that cannot be read; other errors come from the
// connection. Its lengths are -1 with every error.
func readFrameHeader(r *bufio.Reader, limit int64) (frameHeader, error) {
	h := frameHeader{length: -1, raw: -1}
	fail := func(err error) (frameHeader, error) { return frameHeader{length: -1, raw: -1}, err }
	for n := 0; ; n++ {
		if n == maxHeaderLines {
			return fail(malformedFrame("more than %d header lines", maxHeaderLines))
		}
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine {
			return fail(malformedFrame("a header line is longer than %d bytes", maxHeaderLine))
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (n > 0 || len(line) > 0) {
				return fail(io.ErrUnexpectedEOF)
			}
			return fail(err)
		}
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return fail(malformedFrame(`a header line ends in \n without \r`))
		}
		line = line[:len(line)-2]
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return fail(malformedFrame("header line %q has no colon", truncate(line, 64)))
		}
		value = bytes.TrimSpace(value)
		switch name = bytes.TrimSpace(name); {
		case strings.EqualFold(string(name), "Content-Length"):
			l, err := parseLength(value, limit)
			if err != nil {
				return fail(err)
			}
			if h.length >= 0 && l != h.length {
				return fail(malformedFrame("two Content-Length headers disagree (%d and %d)", h.length, l))
			}
			h.length = l
		case strings.EqualFold(string(name), protocol.HeaderRawLength):
			// Bounded by the Content-Length, itself bounded: a value
			// past the limit is no raw length any body can have.
			l, err := parseLengthOf(protocol.HeaderRawLength, value, limit)
			if err != nil {
				var fe *frameError
				if errors.As(err, &fe) && fe.err.Data.Reason == protocol.ReasonMessageTooLarge {
					err = malformedRaw("%s %q is longer than any message this daemon reads", protocol.HeaderRawLength, truncate(value, 32))
				}
				return fail(err)
			}
			if h.raw >= 0 && l != h.raw {
				return fail(malformedRaw("two %s headers disagree (%d and %d)", protocol.HeaderRawLength, h.raw, l))
			}
			h.raw = l
		}
		// Content-Type and any other header are allowed and ignored.
	}
	if h.length < 0 {
		return fail(malformedFrame("no Content-Length header"))
	}
	if h.raw > h.length {
		return fail(malformedRaw("%s %d is more than the Content-Length %d, which counts the raw bytes too", protocol.HeaderRawLength, h.raw, h.length))
	}
	return h, nil
}

// readBody reads a frame's body of length bytes from r.
func readBody(r io.Reader, length int64) ([]byte, error) {
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// parseLength reads a Content-Length value, refusing one over limit
// before anything of the body is read.
func parseLength(v []byte, limit int64) (int64, error) {
	return parseLengthOf("Content-Length", v, limit)
}

// parseLengthOf is parseLength of the header called name.
func parseLengthOf(name string, v []byte, limit int64) (int64, error) {
	if len(v) == 0 {
		return 0, malformedFrame("%s is empty", name)
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, malformedFrame("%s %q is not a decimal number of bytes", name, truncate(v, 32))
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > limit {
		e := protocol.Errorf(protocol.CodeTooLarge, protocol.ReasonMessageTooLarge,
			"message of %s bytes is over this daemon's limit of %d bytes (derived from --max-chunk-bytes); send content in smaller chunks",
			truncate(v, 32), limit)
		e.Data.Limit = limit
		return 0, &frameError{e}
	}
	return n, nil
}

func malformedFrame(format string, args ...any) error {
	return &frameError{protocol.Errorf(protocol.CodeParseError, protocol.ReasonMalformedFrame,
		"malformed frame: "+format+`; each message is "Content-Length: N\r\n\r\n" and N bytes of JSON`, args...)}
}

// malformedRaw is malformedFrame of an Orion-Raw-Length header.
func malformedRaw(format string, args ...any) error {
	return &frameError{protocol.Errorf(protocol.CodeParseError, protocol.ReasonMalformedFrame,
		"malformed frame: "+format+"; with \""+protocol.HeaderRawLength+": M\" the last M of the Content-Length's N bytes are the content, raw, after N-M bytes of JSON", args...)}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// WriteFrame writes data as one frame, header and body in one writev where
// w is a socket.
func WriteFrame(w io.Writer, data []byte) error {
	return writeFrameParts(w, data)
}

// frameHeaderRoom is room for the header of any frame, in front of its body
// (newFrame).
const frameHeaderRoom = len("Content-Length: 18446744073709551615\r\n\r\n")

// newFrame returns an empty frame with room for size bytes of body: append
// the body, then seal it (sealFrame).
func newFrame(size int) []byte {
	return make([]byte, frameHeaderRoom, frameHeaderRoom+size)
}

// reuseFrame is newFrame in buf when it has room for size bytes of body.
func reuseFrame(buf []byte, size int) []byte {
	if cap(buf) < frameHeaderRoom+size {
		return newFrame(size)
	}
	return buf[:frameHeaderRoom]
}

// sealFrame puts the header of frame's body, appended after newFrame's
// room, in front of it and returns the frame, ready to be written in one
// write.
func sealFrame(frame []byte) []byte {
	var hdr [frameHeaderRoom]byte
	h := append(hdr[:0], "Content-Length: "...)
	h = strconv.AppendInt(h, int64(len(frame)-frameHeaderRoom), 10)
	h = append(h, "\r\n\r\n"...)
	start := frameHeaderRoom - len(h)
	copy(frame[start:], h)
	return frame[start:]
}

// writeFrameParts writes the concatenation of parts as one frame.
func writeFrameParts(w io.Writer, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	bufs := make(net.Buffers, 0, 1+len(parts))
	bufs = append(bufs, []byte("Content-Length: "+strconv.Itoa(n)+"\r\n\r\n"))
	bufs = append(bufs, parts...)
	_, err := bufs.WriteTo(w)
	return err
}
