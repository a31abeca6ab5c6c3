package session

import (
	"io"
	"path/filepath"

	"github.com/orion-agent/orion/internal/confine"
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
	// The directories looked in, each opened (and, kept by a request's
	// view, checked again) once for the files read in it: .editorconfig
	// and .gitattributes side by side, read a moment apart.
	var opened map[string]*confine.Dir
	defer func() {
		for _, d := range opened {
			d.Close()
		}
	}()
	read := func(p string) ([]byte, bool) {
		// Through the directory's descriptor, confined as every open is,
		// but with no protection check: that guards what is written, and
		// these files are only read, to shape the new file.
		p = filepath.FromSlash(p)
		dir := filepath.Dir(p)
		d := opened[dir]
		if d == nil {
			if !fsys.InRoots(dir) {
				return nil, false // OpenDir would refuse it
			}
			var err error
			if d, err = fsys.OpenDir(dir); err != nil {
				return nil, false
			}
			if opened == nil {
				opened = map[string]*confine.Dir{}
			}
			opened[dir] = d
		}
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
