package paths

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerCred returns the uid and process id of the process at the other end
// of a Unix socket, as the kernel recorded them at connect time.
func PeerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Xucred
	var credErr, pidErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		pid, pidErr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return -1, 0, err
	}
	if credErr != nil {
		return -1, 0, fmt.Errorf("LOCAL_PEERCRED: %w", credErr)
	}
	if pidErr != nil {
		return -1, 0, fmt.Errorf("LOCAL_PEERPID: %w", pidErr)
	}
	return int(cred.Uid), pid, nil
}
