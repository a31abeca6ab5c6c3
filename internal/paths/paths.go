// Package paths computes oriond's default locations from the XDG base
// directory variables, shared by the daemon and its clients so both agree on
// where the socket is without configuration.
package paths

import (
	"fmt"
	"os"
	"path/filepath"
)

// SocketName is the file name of the daemon's socket inside its directory.
const SocketName = "oriond.sock"

// MaxSocketPath is the longest Unix socket path the platforms we support
// accept (macOS: 104 bytes including the terminating NUL; Linux allows 108).
const MaxSocketPath = 103

// Env is a lookup function for environment variables, so tests can replace
// the process environment.
type Env func(string) string

// DefaultSocket is $ORION_SOCKET, else $XDG_RUNTIME_DIR/orion/oriond.sock,
// else $TMPDIR/orion-$UID/oriond.sock (/tmp where TMPDIR is unset): the
// runtime directory is per user and cleared at logout, which is what a
// socket wants; the temp directory is the documented fallback where no
// session manager sets XDG_RUNTIME_DIR (containers, ssh without
// systemd-logind).
func DefaultSocket(env Env) string {
	if s := env("ORION_SOCKET"); s != "" {
		return s
	}
	if dir := env("XDG_RUNTIME_DIR"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "orion", SocketName)
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("orion-%d", os.Getuid()), SocketName)
}

// DefaultStateDir is $ORION_STATE_DIR, else $XDG_STATE_HOME/orion, else
// ~/.local/state/orion.
func DefaultStateDir(env Env) (string, error) {
	if s := env("ORION_STATE_DIR"); s != "" {
		return s, nil
	}
	return xdgDir(env, "XDG_STATE_HOME", ".local/state")
}

// DefaultConfigDir is $XDG_CONFIG_HOME/orion, else ~/.config/orion.
func DefaultConfigDir(env Env) (string, error) {
	return xdgDir(env, "XDG_CONFIG_HOME", ".config")
}

func xdgDir(env Env, variable, fallback string) (string, error) {
	// The XDG spec says a relative value is invalid and must be ignored.
	if dir := env(variable); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "orion"), nil
	}
	home := env("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("finding the home directory for %s: %w", variable, err)
		}
	}
	return filepath.Join(home, fallback, "orion"), nil
}

// HomeDir is $HOME, or the user database's home directory.
func HomeDir(env Env) (string, error) {
	if home := env("HOME"); home != "" {
		return home, nil
	}
	return os.UserHomeDir()
}

// SocketTempDir makes a new private directory (os.MkdirTemp's pattern)
// for a throwaway daemon's socket, where rest (the socket's path below
// it) will fit within MaxSocketPath: in the temp directory when it does
// there, else in /tmp. A private TMPDIR can be long enough (macOS's
// /var/folders/…/T/, a CI job's own directory) that a socket in it could
// not be bound. For tests and benchmark tools; the caller removes it.
func SocketTempDir(pattern, rest string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if len(filepath.Join(dir, rest)) <= MaxSocketPath {
		return dir, nil
	}
	os.Remove(dir)
	return os.MkdirTemp("/tmp", pattern)
}
