package protocol

import (
	"errors"
	"io"
	"unicode/utf8"
)

// CharBoundary returns the largest n <= len(b) such that b[:n] does not end
// inside a UTF-8 character. Bytes that can never become a character are not
// held back, or a stream of invalid bytes would never make progress.
func CharBoundary(b []byte) int {
	// A character is at most 4 bytes, so only the last 3 can belong to an
	// incomplete one.
	for back := 1; back < utf8.UTFMax && back <= len(b); back++ {
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

// SplitChunks reads r to the end and calls fn with chunks of at most size
// bytes, each cut on a UTF-8 character boundary, as session.append wants
// them. fn must not keep chunk after it returns.
func SplitChunks(r io.Reader, size int, fn func(chunk []byte) error) error {
	// A chunk must hold a whole character, or cutting on character
	// boundaries could never make progress.
	buf := make([]byte, max(size, utf8.UTFMax))
	carried := 0
	for {
		n, err := io.ReadFull(r, buf[carried:])
		n += carried
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return err
		}
		cut := n
		if !eof {
			cut = CharBoundary(buf[:n])
		}
		if cut > 0 {
			if err := fn(buf[:cut]); err != nil {
				return err
			}
		}
		carried = copy(buf, buf[cut:n])
		if eof {
			return nil
		}
	}
}
