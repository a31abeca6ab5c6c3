package contentlog

import "os"

// WithFaults makes Open's segment files fail as fault says: it is asked
// before each write ("write"), sync ("sync") and allocation ("allocate"),
// and its error, if any, is returned instead of doing it.
func WithFaults(opts Options, fault func(op string) error) Options {
	opts.file = func(path string, flag int) (segFile, error) {
		f, err := openOSFile(path, flag)
		if err != nil {
			return nil, err
		}
		return faultyFile{f.(osFile), fault}, nil
	}
	return opts
}

type faultyFile struct {
	osFile
	fault func(op string) error
}

func (f faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fault("write"); err != nil {
		// A failed write may have written part of its bytes.
		n, _ := f.osFile.WriteAt(b[:len(b)/2], off)
		return n, err
	}
	return f.osFile.WriteAt(b, off)
}

func (f faultyFile) Sync() error {
	if err := f.fault("sync"); err != nil {
		return err
	}
	return f.osFile.Sync()
}

func (f faultyFile) Allocate(size int64) error {
	if err := f.fault("allocate"); err != nil {
		return err
	}
	return f.osFile.Allocate(size)
}

func (f faultyFile) Stat() (os.FileInfo, error) { return f.osFile.Stat() }

// HeaderSize is the size of a record's header, for tests that damage one.
const HeaderSize = headerSize
