package proxy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orion-agent/orion/internal/httpguard"
	"github.com/orion-agent/orion/internal/paths"
)

// TokenFileName is the name of the shared proxy's secret file in the
// user's configuration directory.
const TokenFileName = "proxy-token"

// maxTokenFile bounds what is read of a secret file.
const maxTokenFile = 4 << 10

// DefaultTokenFile is where the shared proxy keeps its secret:
// $XDG_CONFIG_HOME/orion/proxy-token, else ~/.config/orion/proxy-token.
// The configuration directory, not the runtime one: the secret is in the
// agents' settings, and must outlive a reboot.
func DefaultTokenFile(env paths.Env) (string, error) {
	dir, err := paths.DefaultConfigDir(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, TokenFileName), nil
}

// LoadToken returns the secret kept in path. When there is none it makes
// one: a fresh random secret, in a file only the user can read (0600, in
// a directory created 0700), and created says so. Two proxies starting at
// once agree on one secret: the file appears whole or not at all, and the
// second reads the first's.
//
// A file that others can read, or that belongs to another user, is
// refused: its secret proves nothing.
func LoadToken(path string) (token string, created bool, err error) {
	token, err = readToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	tmp, err := writeTemp(path, httpguard.NewToken())
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp)
	switch err := os.Link(tmp, path); {
	case errors.Is(err, fs.ErrExist):
		token, err := readToken(path)
		return token, false, err
	case err != nil:
		return "", false, fmt.Errorf("creating the proxy's secret file: %w", err)
	}
	syncDir(filepath.Dir(path))
	token, err = readToken(path)
	return token, err == nil, err
}

// RotateToken replaces the secret in path (or creates it) with a fresh
// one and returns it. A proxy that runs keeps the secret it started with
// until it is restarted.
func RotateToken(path string) (string, error) {
	token := httpguard.NewToken()
	tmp, err := writeTemp(path, token)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("replacing the proxy's secret: %w", err)
	}
	syncDir(filepath.Dir(path))
	return token, nil
}

// writeTemp writes token to a new file beside path, 0600 and synced.
func writeTemp(path, token string) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the directory of the proxy's secret: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing the proxy's secret: %w", err)
	}
	// CreateTemp makes it 0600, whatever the umask.
	_, err = io.WriteString(f, token+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing the proxy's secret: %w", err)
	}
	return f.Name(), nil
}

// readToken reads and checks the secret in path.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("reading the proxy's secret: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the proxy's secret: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the proxy's secret file %s is not a regular file", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "", fmt.Errorf("the proxy's secret file %s belongs to %s, not to you (%s): another user may know it; remove it, and a new one is made at the next start",
			path, paths.Owner(int(st.Uid)), paths.Owner(os.Getuid()))
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the proxy's secret file %s can be read by others (mode %04o): other users may know it; "+
			"run `chmod 600 %s` if no one else has read it, else `orionctl proxy --rotate-token`", path, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the proxy's secret: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("the proxy's secret file %s is over %d bytes: is it the right file?", path, maxTokenFile)
	}
	if _, err := httpguard.New(httpguard.Options{Token: token}); err != nil {
		return "", fmt.Errorf("the proxy's secret file %s: %v; write another, or run `orionctl proxy --rotate-token`", path, err)
	}
	return token, nil
}

// syncDir makes a new name in dir durable; a failure only risks the name
// at a power cut, after which a new secret is made.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
