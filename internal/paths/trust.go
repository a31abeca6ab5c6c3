package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrUntrustedSocket is wrapped by every refusal of TrustSocket and
// TrustPeer: the socket, its directory or the process behind it is not the
// user's, so a client must send it nothing.
var ErrUntrustedSocket = errors.New("untrusted socket")

// hint is what a refusal tells the user to do.
const hint = "set XDG_RUNTIME_DIR (or ORION_SOCKET) to a directory only you can write, or remove what another user put there"

// Owner names a uid for a message: "uid 1001 (alice)", or "uid 1001" when
// the user database does not know it.
func Owner(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}

// TrustDir checks that dir may hold the socket of a daemon run by uid:
// it belongs to uid or to root, and is not writable by group or others
// unless it is sticky (as /tmp is: others cannot remove or rename what is
// not theirs, and TrustSocket checks the socket itself). Another user's
// directory, such as a /tmp/orion-<uid> created first by someone else, is
// refused with its owner named.
func TrustDir(dir string, uid int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: socket directory %s is not a directory", ErrUntrustedSocket, dir)
	}
	if owner := int(st.Uid); owner != uid && owner != 0 {
		return fmt.Errorf("%w: socket directory %s belongs to %s, not to you (%s): another user may run a daemon of its own there; %s",
			ErrUntrustedSocket, dir, Owner(owner), Owner(uid), hint)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%w: socket directory %s (owner %s) is writable by others (mode %#o): anyone could replace the socket; run chmod go-w %s, or %s",
			ErrUntrustedSocket, dir, Owner(int(st.Uid)), fi.Mode().Perm(), dir, hint)
	}
	return nil
}

// TrustSocket checks, before anything is sent, that path is a socket that
// belongs to uid in a directory TrustDir accepts. A missing socket is
// returned as the fs.ErrNotExist error it is (no daemon, not an attack).
func TrustSocket(path string, uid int) error {
	if err := TrustDir(filepath.Dir(path), uid); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is not a socket (mode %s)", ErrUntrustedSocket, path, fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return fmt.Errorf("%w: socket %s belongs to %s, not to you (%s): another user may be impersonating oriond, so nothing was sent; %s",
			ErrUntrustedSocket, path, Owner(int(st.Uid)), Owner(uid), hint)
	}
	return nil
}

// TrustPeer checks that the process listening at the other end of c runs
// as uid, by the credentials the kernel recorded (SO_PEERCRED,
// LOCAL_PEERCRED): the socket file may be ours and still be served by
// another user's process.
func TrustPeer(c *net.UnixConn, uid int) error {
	peer, _, err := PeerCred(c)
	if err != nil {
		return fmt.Errorf("%w: reading the daemon's credentials: %v", ErrUntrustedSocket, err)
	}
	if peer != uid {
		return fmt.Errorf("%w: the process serving %s runs as %s, not as you (%s): another user may be impersonating oriond, so nothing was sent; %s",
			ErrUntrustedSocket, c.RemoteAddr(), Owner(peer), Owner(uid), hint)
	}
	return nil
}
