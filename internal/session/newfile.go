package session

import (
	"io"
	"path/filepath"

	"github.com/orion-agent/orion/internal/newfile"
)

// newFileStyle is what the project's .editorconfig and .gitattributes say
// about the new file r writes, read from the target's directory up to its
// workspace (or the repository holding it), through the same confined
// reads as the target.
func (m *Manager) newFileStyle(r *record) newfile.Style {
	return m.styleOf(r, r.Target)
}

// styleOf is what the project says about target, one of r's files.
func (m *Manager) styleOf(r *record, target string) newfile.Style {
	fsys := m.fsOf(r)
	top := m.workspaceOf(r)
	if top == "" {
		top = "/"
		for d := filepath.Dir(target); ; d = filepath.Dir(d) {
			if fsys.PathScope().HasDotGit(d) {
				top = d
				break
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	read := func(p string) ([]byte, bool) {
		// Through the directory's descriptor, confined as every open is,
		// but with no protection check: that guards what is written, and
		// these files are only read, to shape the new file.
		p = filepath.FromSlash(p)
		if !fsys.InRoots(filepath.Dir(p)) {
			return nil, false // OpenDir would refuse it
		}
		d, err := fsys.OpenDir(filepath.Dir(p))
		if err != nil {
			return nil, false
		}
		defer d.Close()
		f, err := d.OpenRegular(filepath.Base(p))
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
