package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerUID returns the uid of the process at the other end of a Unix socket,
// as the kernel recorded it at connect time.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return int(cred.Uid), nil
}

// peerProcess returns the name of the process at the other end of a Unix
// socket (its comm, as ps shows it), for listings; "" when unknown. The
// pid is the kernel's record from connect time; the name is read at
// once, while the peer is connected.
func peerProcess(c *net.UnixConn) string {
	raw, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	var cred *unix.Ucred
	if err := raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cred == nil || cred.Pid <= 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(cred.Pid)) + "/comm")
	if err != nil {
		return ""
	}
	return processName(b)
}
