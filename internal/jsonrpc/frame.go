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
// Content-Length, at most limit. A frameError is a frame that cannot be
// read; other errors come from the connection. It returns -1 with every
// error.
func readHeader(r *bufio.Reader, limit int64) (int64, error) {
	length := int64(-1)
	for n := 0; ; n++ {
		if n == maxHeaderLines {
			return -1, malformedFrame("more than %d header lines", maxHeaderLines)
		}
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine {
			return -1, malformedFrame("a header line is longer than %d bytes", maxHeaderLine)
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (n > 0 || len(line) > 0) {
				return -1, io.ErrUnexpectedEOF
			}
			return -1, err
		}
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return -1, malformedFrame(`a header line ends in \n without \r`)
		}
		line = line[:len(line)-2]
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return -1, malformedFrame("header line %q has no colon", truncate(line, 64))
		}
		if !strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			// Content-Type and any other header are allowed and ignored.
			continue
		}
		l, err := parseLength(bytes.TrimSpace(value), limit)
		if err != nil {
			return -1, err
		}
		if length >= 0 && l != length {
			return -1, malformedFrame("two Content-Length headers disagree (%d and %d)", length, l)
		}
		length = l
	}
	if length < 0 {
		return -1, malformedFrame("no Content-Length header")
	}
	return length, nil
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
	if len(v) == 0 {
		return 0, malformedFrame("Content-Length is empty")
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, malformedFrame("Content-Length %q is not a decimal number of bytes", truncate(v, 32))
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
