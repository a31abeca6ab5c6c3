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
