package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid and process id of the process at the other end
// of a Unix socket, as the kernel recorded them at connect time.
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, 0, err
	}
	if credErr != nil {
		return -1, 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// peerProcess returns the name of process pid (its comm, as ps shows it),
// for listings; "" when unknown. It is read at accept, while the peer is
// connected, so the pid is still the peer's.
func peerProcess(pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return processName(b)
}
