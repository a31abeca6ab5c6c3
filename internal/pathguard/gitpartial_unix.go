//go:build unix

package pathguard

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// openByPath reads a directory by its path, for the checks made when a
// session begins; the write itself is checked again through descriptors.
func openByPath(dir string) (DirReader, error) {
	// O_DIRECTORY: a FIFO where the directory should be fails at once
	// instead of waiting for a writer.
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return pathDir{f}, nil
}

type pathDir struct{ f *os.File }

func (d pathDir) Close() error { return d.f.Close() }

func (d pathDir) Lstat(name string) (fs.FileMode, error) {
	fi, err := os.Lstat(filepath.Join(d.f.Name(), name))
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

func (d pathDir) ReadHead(name string, n int) ([]byte, error) {
	// O_NONBLOCK: a FIFO put there meanwhile does not block the open.
	f, err := os.OpenFile(filepath.Join(d.f.Name(), name), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, err
	}
	var b bytes.Buffer
	_, err = io.Copy(&b, io.LimitReader(f, int64(n)))
	return b.Bytes(), err
}

// lstatEntry is os.Lstat for the git rules, which look for HEAD, .git and
// commondir in every directory above every path checked, where they are
// mostly missing: without the error value and file info os.Lstat
// allocates each time. ok is false wherever os.Lstat would fail.
func lstatEntry(p string) (entry, bool) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(p, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return entry{}, false
		}
		break
	}
	t := st.Mode & syscall.S_IFMT
	return entry{dir: t == syscall.S_IFDIR, regular: t == syscall.S_IFREG, size: st.Size}, true
}
