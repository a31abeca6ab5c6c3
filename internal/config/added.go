package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	toml "github.com/pelletier/go-toml/v2"
)

// AddedRootsFile is the file in the daemon's state directory that keeps
// the roots a person allowed while the daemon ran (orionctl allow). The
// daemon adds them to allow-root at every start, whatever set allow-root
// (flag, environment, config file or default): they widen it, they do not
// replace it. It lives in the state directory, which a session may never
// write, and not in the config file, which is the person's own and may be
// overridden by a flag (a service unit's --allow-root).
const AddedRootsFile = "allowed-roots.toml"

// addedRoots is the file's content.
type addedRoots struct {
	AllowRoot []string `toml:"allow-root"`
}

// AddedRootsPath is the file in stateDir.
func AddedRootsPath(stateDir string) string { return filepath.Join(stateDir, AddedRootsFile) }

// maxAddedRootsBytes bounds the file read at start: thousands of paths.
const maxAddedRootsBytes = 1 << 20

// ReadAddedRoots returns the roots kept in stateDir; none when the file
// does not exist.
func ReadAddedRoots(stateDir string) ([]string, error) {
	p := AddedRootsPath(stateDir)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if n, err := buf.ReadFrom(io.LimitReader(f, maxAddedRootsBytes+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	} else if n > maxAddedRootsBytes {
		return nil, fmt.Errorf("%s is over %d bytes; it holds only the roots orionctl allow added", p, maxAddedRootsBytes)
	}
	var a addedRoots
	if err := toml.Unmarshal(buf.Bytes(), &a); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	for _, r := range a.AllowRoot {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("%s: allowed root %q is relative", p, r)
		}
	}
	return a.AllowRoot, nil
}

// WriteAddedRoots replaces the roots kept in stateDir, atomically and
// durably: the reply that says a root was allowed comes after this.
func WriteAddedRoots(stateDir string, roots []string) error {
	var b bytes.Buffer
	b.WriteString("# Directories allowed while oriond ran (orionctl allow). oriond adds them to\n")
	b.WriteString("# allow-root at every start; delete a line to drop one (then restart oriond).\n")
	b.WriteString("allow-root = [\n")
	for _, r := range roots {
		fmt.Fprintf(&b, "  %s,\n", tomlString(r))
	}
	b.WriteString("]\n")
	tmp, err := os.CreateTemp(stateDir, ".allowed-roots-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), AddedRootsPath(stateDir)); err != nil {
		return err
	}
	d, err := os.Open(stateDir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
