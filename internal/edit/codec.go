package edit

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

// ErrUnsupportedEncoding: a file is in an encoding whose round trip
// through UTF-8 would not give back its bytes, so an edit would garble it.
var ErrUnsupportedEncoding = errors.New("unsupported encoding")

// codec is a file's encoding when it is not UTF-8: edits match and
// apply on the file decoded to UTF-8 (what a model reads and writes), and
// the result is encoded back.
type codec struct {
	name string
	enc  encoding.Encoding
}

// decodeFile returns the UTF-8 text of a file that starts with a UTF-16
// byte order mark, and its codec; other files come back as they are with
// a nil codec (UTF-8 and single-byte text are edited byte for byte). The
// decoded text must encode back to the very same bytes, or the file is
// refused: an unpaired surrogate or an odd byte count would not survive.
func decodeFile(b []byte) ([]byte, *codec, error) {
	var c *codec
	switch {
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}):
		c = &codec{"UTF-16LE", unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM)}
	case bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		c = &codec{"UTF-16BE", unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM)}
	default:
		return b, nil, nil
	}
	text, err := c.enc.NewDecoder().Bytes(b)
	if err == nil {
		var back []byte
		back, err = c.enc.NewEncoder().Bytes(text)
		if err == nil && !bytes.Equal(back, b) {
			err = errors.New("its bytes do not survive decoding and encoding again")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the file starts with a %s byte order mark, but %v; edit it with a tool that keeps its bytes", ErrUnsupportedEncoding, c.name, err)
	}
	return text, c, nil
}

// encode writes UTF-8 text back in the codec's encoding (with its byte
// order mark). A nil codec keeps the text as it is.
func (c *codec) encode(text []byte) ([]byte, error) {
	if c == nil {
		return text, nil
	}
	b, err := c.enc.NewEncoder().Bytes(text)
	if err != nil {
		return nil, fmt.Errorf("%w: the edited text cannot be written as %s: %v", ErrUnsupportedEncoding, c.name, err)
	}
	return b, nil
}

// onText applies f to the UTF-8 text of old and encodes the content it
// returns back in old's encoding.
func onText(old []byte, format Format, f func(text []byte) (Result, error)) (Result, error) {
	text, c, err := decodeFile(old)
	if err != nil {
		return Result{Format: format}, err
	}
	res, err := f(text)
	if err != nil || c == nil {
		return res, err
	}
	if res.Content, err = c.encode(res.Content); err != nil {
		res.Content, res.Changed = nil, false
	}
	return res, err
}

// decodingRead wraps read so that every file comes back as UTF-8 text; raw
// keeps each decoded file's bytes and codec, for encodeOps.
func decodingRead(read ReadFunc) (ReadFunc, map[string]rawFile) {
	raw := map[string]rawFile{}
	return func(p string) ([]byte, bool, error) {
		data, ok, err := read(p)
		if err != nil || !ok {
			return data, ok, err
		}
		text, c, err := decodeFile(data)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", p, err)
		}
		if c != nil {
			raw[p] = rawFile{data, c}
		}
		return text, true, nil
	}, raw
}

type rawFile struct {
	data []byte
	c    *codec
}

// encodeOps writes the contents of res's file operations (and of the
// target, for a one-file edit) back in the
// encodings their files were read in, and gives back the bytes each was
// computed against.
func encodeOps(res *Result, target string, raw map[string]rawFile) error {
	if len(raw) == 0 {
		return nil
	}
	for i := range res.Files {
		op := &res.Files[i]
		rf, ok := raw[op.Path]
		if !ok {
			continue
		}
		if op.Old != nil {
			op.Old = rf.data
		}
		if op.Content != nil {
			b, err := rf.c.encode(op.Content)
			if err != nil {
				res.Files = nil
				return err
			}
			op.Content = b
		}
		if rf2, ok := raw[op.MoveTo]; ok && op.Replaced {
			op.ReplacedOld = rf2.data
		}
	}
	if rf, ok := raw[target]; ok && res.Content != nil {
		b, err := rf.c.encode(res.Content)
		if err != nil {
			res.Files = nil
			return err
		}
		res.Content = b
	}
	return nil
}
