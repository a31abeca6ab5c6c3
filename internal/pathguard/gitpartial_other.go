//go:build !unix

package pathguard

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// openByPath reads a directory by its path, for the checks made when a
// session begins. Systems without FIFOs in the file system need none of
// the unix open flags.
func openByPath(dir string) (DirReader, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return pathDir{dir}, nil
}

type pathDir struct{ dir string }

func (d pathDir) Close() error { return nil }

func (d pathDir) Lstat(name string) (fs.FileMode, error) {
	fi, err := os.Lstat(filepath.Join(d.dir, name))
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

func (d pathDir) ReadHead(name string, n int) ([]byte, error) {
	f, err := os.Open(filepath.Join(d.dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, io.LimitReader(f, int64(n)))
	return b.Bytes(), err
}

// lstatEntry is os.Lstat for the git rules; ok is false where it fails.
func lstatEntry(p string) (entry, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return entry{}, false
	}
	return entry{dir: fi.IsDir(), regular: fi.Mode().IsRegular(), size: fi.Size()}, true
}
