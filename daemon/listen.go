package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/paths"
)

// ErrAlreadyRunning means another oriond serves the socket or holds the
// state directory.
var ErrAlreadyRunning = errors.New("another oriond is already running")

// socketListener is a Unix listener that owns its socket file and the lock
// that makes it the only daemon on that path.
type socketListener struct {
	net.Listener
	path string
	lock *os.File
	// sharedDir is set when the socket's directory is open to other users.
	sharedDir bool
}

// listen prepares the socket's directory (0700, ours), takes the socket's
// lock file so a second daemon fails fast instead of stealing the path,
// removes a stale socket left by a crash, and listens with mode 0600.
func listen(path string) (*socketListener, error) {
	if len(path) > paths.MaxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes; Unix sockets allow at most %d on every platform we support: choose a shorter --socket",
			path, len(path), paths.MaxSocketPath)
	}
	dir := filepath.Dir(path)
	shared, err := ensurePrivateDir(dir)
	if err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the socket lock: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w on socket %s (its lock %s.lock is held); stop it first or pick another --socket",
				ErrAlreadyRunning, path, path)
		}
		return nil, fmt.Errorf("locking %s.lock: %w", path, err)
	}
	if err := removeStale(path); err != nil {
		lock.Close()
		return nil, err
	}
	// The directory is already private; the mode on the socket itself is
	// the second fence, for directories shared by mistake. The socket is
	// made under a temporary name, restricted, then renamed into place,
	// so nobody ever connects to it before it is 0600 (a client that did
	// would keep a connection the chmod cannot take back).
	tmp := filepath.Join(dir, fmt.Sprintf(".oriond-%d", os.Getpid()))
	if len(tmp) > paths.MaxSocketPath {
		tmp = path
	}
	os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		lock.Close()
		return nil, fmt.Errorf("restricting %s: %w", path, err)
	}
	if tmp != path {
		if err := os.Rename(tmp, path); err != nil {
			ln.Close()
			os.Remove(tmp)
			lock.Close()
			return nil, fmt.Errorf("putting the socket in place at %s: %w", path, err)
		}
	}
	// We remove the socket ourselves on Close, after the lock is released
	// by nobody else; net's unlink-on-close would race a successor.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return &socketListener{Listener: ln, path: path, lock: lock, sharedDir: shared}, nil
}

// Close stops listening, removes the socket and releases the lock.
func (l *socketListener) Close() error {
	err := l.Listener.Close()
	os.Remove(l.path)
	l.lock.Close()
	return err
}

// ensurePrivateDir creates dir 0700, or checks that an existing one belongs
// to us (or to root) and that others cannot write it unless it is sticky,
// as paths.TrustDir says. An existing directory's mode is never changed (it
// may be a shared one such as /tmp, named by --socket); the socket's own
// mode 0600 and the peer uid check still keep other users out, and the
// caller is told.
func ensurePrivateDir(dir string) (shared bool, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, fmt.Errorf("creating the socket directory: %w", err)
		}
		// MkdirAll's mode is filtered by the umask; be exact.
		return false, os.Chmod(dir, 0o700)
	}
	if err != nil {
		return false, fmt.Errorf("checking the socket directory: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("socket directory %s is not a directory", dir)
	}
	// The rules clients check before they send anything (another user's
	// directory, or one others may write that is not sticky, is refused):
	// a daemon that started there would be one its clients refuse, and in
	// the fallback directory /tmp/orion-<uid> another user may have put
	// it first to impersonate this daemon.
	if err := paths.TrustDir(dir, os.Getuid()); err != nil {
		return false, fmt.Errorf("refusing to serve there: %w; or give another --socket", err)
	}
	return fi.Mode().Perm()&0o077 != 0, nil
}

// removeStale deletes a socket file that nobody answers on. One that still
// answers belongs to a live daemon that does not hold our lock (an older
// version, or one started on another lock path), and is left alone.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	c, err := net.DialTimeout("unix", path, 500*time.Millisecond)
	if err == nil {
		c.Close()
		return fmt.Errorf("%w: something answers on %s", ErrAlreadyRunning, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	return nil
}
