package contentlog

import "os"

// osFile is a segment file on disk.
type osFile struct{ *os.File }

func openOSFile(path string, flag int) (segFile, error) {
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// syncDir makes the creation or removal of a file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// faultyFile is a segment file failing as Options.Fault says.
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
