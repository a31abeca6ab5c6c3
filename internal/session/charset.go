package session

import (
	"bytes"

	"github.com/orion-agent/orion/internal/charset"
	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/internal/merge"
)

// A target in another encoding than UTF-8 (see internal/charset) is
// edited, validated and merged as the UTF-8 text it holds, and written
// back in its encoding.

// charsetOf is the charset the project names for a file of r's (its
// working-tree-encoding, else its .editorconfig charset), for an edit or
// a write over it to decode and encode it in.
func (m *Manager) charsetOf(r *record, target string) edit.Charset {
	style := m.styleOf(r, target)
	name, from := style.FileCharset()
	if style.Binary && style.WorkingTreeEncoding == "" {
		// A file git keeps as binary is not guessed at: its bytes are
		// edited as they are (a UTF-16 byte order mark still decides, as
		// such files are often marked binary for git's diff's sake).
		return edit.Charset{Name: "utf-8", From: "-text in .gitattributes"}
	}
	return edit.Charset{Name: name, From: from}
}

// textOf is a file's new and old content as the UTF-8 text validation
// and diffs read, when the old content is in another encoding (a UTF-16
// JSON file is JSON); otherwise both as they are.
func (m *Manager) textOf(r *record, path string, content, old []byte) ([]byte, []byte) {
	if old == nil {
		return content, old
	}
	cs := m.charsetOf(r, path)
	codec, oldText, err := charset.DecodeFile(old, cs.Name, cs.From)
	if err != nil || codec == nil {
		return content, old
	}
	text, err := codec.Decode(content)
	if err != nil {
		return content, old
	}
	return text, oldText
}

// merge3 is merge.Merge3 for path, one of r's files: a file in another
// encoding is merged as its text (UTF-16 holds NUL bytes, which a merge
// takes for a binary file, and its line breaks are two bytes) and the
// merge encoded back; the hunks and conflicts it reports are text.
// Contents that do not all decode in the encoding of ours (the file now)
// are merged as bytes. Where ours differs from base only in its line
// endings, all of one kind (a CRLF checkout), that is no change: the
// result is theirs with ours' endings.
func (m *Manager) merge3(r *record, path string, base, ours, theirs []byte) merge.Result {
	cs := m.charsetOf(r, path)
	codec, oursText, err := charset.DecodeFile(ours, cs.Name, cs.From)
	if err != nil {
		return merge.Merge3(base, ours, theirs)
	}
	baseText, berr := codec.Decode(base)
	theirsText, terr := codec.Decode(theirs)
	if berr != nil || terr != nil {
		return merge.Merge3(base, ours, theirs)
	}
	var res merge.Result
	if eol, ok := uniformEOL(oursText); ok && !bytes.Equal(oursText, baseText) && bytes.Equal(lfForm(oursText), lfForm(baseText)) {
		res = merge.Result{Clean: true, Merged: withEOL(lfForm(theirsText), eol)}
	} else {
		res = merge.Merge3(baseText, oursText, theirsText)
	}
	if res.Clean && codec != nil {
		b, err := codec.Encode(res.Merged)
		if err != nil {
			return merge.Merge3(base, ours, theirs)
		}
		res.Merged = b
	}
	return res
}

// uniformEOL is the line ending every line of b ends with, when they all
// end alike (and some line ends).
func uniformEOL(b []byte) (string, bool) {
	n := bytes.Count(b, []byte("\n"))
	if n == 0 {
		return "", false
	}
	switch bytes.Count(b, []byte("\r\n")) {
	case n:
		return "\r\n", true
	case 0:
		return "\n", true
	}
	return "", false
}

// withEOL writes the LF text b with eol line endings.
func withEOL(b []byte, eol string) []byte {
	if eol == "\n" {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte(eol))
}
