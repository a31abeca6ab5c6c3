package session

import (
	"io"
	"os"
	"path/filepath"

	"github.com/orion-agent/orion/internal/charset"
	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/internal/newfile"
)

// newFileStyle is what the project's .editorconfig and .gitattributes say
// about the new file r writes, read from the target's directory up to its
// workspace (or the repository holding it), through the same confined
// reads as the target.
func (m *Manager) newFileStyle(r *record) newfile.Style {
	return m.styleOf(r, r.Target)
}

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

// styleOf is what the project says about target, one of r's files.
func (m *Manager) styleOf(r *record, target string) newfile.Style {
	top := m.workspaceOf(r)
	if top == "" {
		top = "/"
		for d := filepath.Dir(target); ; d = filepath.Dir(d) {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				top = d
				break
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	read := func(p string) ([]byte, bool) {
		f, err := m.openRegular(filepath.FromSlash(p))
		if err != nil {
			return nil, false
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, newfile.MaxConfigBytes+1))
		if err != nil || len(data) > newfile.MaxConfigBytes {
			return nil, false
		}
		return data, true
	}
	return newfile.Lookup(filepath.ToSlash(target), filepath.ToSlash(top), read)
}

// textForValidation is a file's new and old content as the UTF-8 text
// validation reads, when the old content is in another encoding (a
// UTF-16 JSON file is JSON); otherwise both as they are.
func (m *Manager) textForValidation(r *record, path string, content, old []byte) ([]byte, []byte) {
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
