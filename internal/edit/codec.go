package edit

import (
	"fmt"

	"github.com/orion-agent/orion/internal/charset"
)

// ErrUnsupportedEncoding: a file is in an encoding whose round trip
// through UTF-8 would not give back its bytes, so an edit would garble it,
// or the edited text has a character its encoding cannot hold.
var ErrUnsupportedEncoding = charset.ErrUnsupportedEncoding

// Charset is the encoding a project names for a file (.editorconfig's
// charset, .gitattributes' working-tree-encoding) and the file that says
// so. The zero value names none: the file's bytes decide (see package
// charset for the rules).
type Charset struct{ Name, From string }

// codec is a file's encoding when it is not UTF-8: edits match and
// apply on the file decoded to UTF-8 (what a model reads and writes), and
// the result is encoded back.
type codec = charset.Codec

// decodeFile returns the UTF-8 text of a file and its codec; UTF-8 files
// (and files to edit byte for byte) come back as they are with a nil
// codec. The decoded text must encode back to the very same bytes, or the
// file is refused: an unpaired surrogate or an odd byte count would not
// survive.
func decodeFile(b []byte, cs Charset) ([]byte, *codec, error) {
	c, text, err := charset.DecodeFile(b, cs.Name, cs.From)
	return text, c, err
}

// onText applies f to the UTF-8 text of old and encodes the content it
// returns back in old's encoding.
func onText(old []byte, cs Charset, format Format, f func(text []byte) (Result, error)) (Result, error) {
	text, c, err := decodeFile(old, cs)
	if err != nil {
		return Result{Format: format}, err
	}
	res, err := f(text)
	if err != nil || c == nil {
		return res, err
	}
	if res.Content, err = c.Encode(res.Content); err != nil {
		res.Content, res.Changed = nil, false
	}
	return res, err
}

// decodingRead wraps read so that every file comes back as UTF-8 text; raw
// keeps each decoded file's bytes and codec, for encodeOps.
func decodingRead(read ReadFunc, charsetOf func(path string) Charset) (ReadFunc, map[string]rawFile) {
	raw := map[string]rawFile{}
	return func(p string) ([]byte, bool, error) {
		data, ok, err := read(p)
		if err != nil || !ok {
			return data, ok, err
		}
		var cs Charset
		if charsetOf != nil {
			cs = charsetOf(p)
		}
		text, c, err := decodeFile(data, cs)
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
			b, err := rf.c.Encode(op.Content)
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
		b, err := rf.c.Encode(res.Content)
		if err != nil {
			res.Files = nil
			return err
		}
		res.Content = b
	}
	return nil
}
