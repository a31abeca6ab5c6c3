package tcppeer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func lookup(local, remote *net.TCPAddr) (int, bool) {
	uid, ok, err := diag(remote, local)
	if err == nil {
		return uid, ok
	}
	// No sock_diag here (a kernel without inet_diag, a sandbox that
	// forbids netlink): the same facts, from the tables in /proc, at the
	// cost of reading every socket's line.
	return procLookup(local, remote)
}

// diag asks the kernel, over sock_diag (what ss uses), for the socket
// whose local address is the client's and whose remote one is the
// server's: an exact lookup, whatever the number of sockets. An IPv4
// client is an AF_INET socket even when a dual-stack listener sees it as
// ::ffff:127.0.0.1; one that dialled the mapped address from an IPv6
// socket is tried next.
func diag(client, server *net.TCPAddr) (uid int, ok bool, err error) {
	if c4, s4 := client.IP.To4(), server.IP.To4(); c4 != nil && s4 != nil {
		uid, ok, err = diagOne(unix.AF_INET, c4, client.Port, s4, server.Port)
		if err != nil || ok {
			return uid, ok, err
		}
	}
	c16, s16 := client.IP.To16(), server.IP.To16()
	if c16 == nil || s16 == nil {
		return 0, false, nil
	}
	return diagOne(unix.AF_INET6, c16, client.Port, s16, server.Port)
}

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	tcpListen        = 10 // TCP_LISTEN, a state of struct inet_diag_msg
	sizeofSockID     = 48 // struct inet_diag_sockid
	// uidOffset is idiag_uid's place in a reply: the netlink header (16),
	// then struct inet_diag_msg's family, state, timer, retrans (4), its
	// sockid (48), expires, rqueue and wqueue (12).
	uidOffset = unix.SizeofNlMsghdr + 4 + sizeofSockID + 12
)

func diagOne(family byte, client net.IP, cport int, server net.IP, sport int) (int, bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return 0, false, err
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1}); err != nil {
		return 0, false, err
	}
	ne := binary.NativeEndian
	req := make([]byte, unix.SizeofNlMsghdr+8+sizeofSockID)
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	r := req[unix.SizeofNlMsghdr:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(cport))
	binary.BigEndian.PutUint16(id[2:], uint16(sport))
	copy(id[4:20], client)
	copy(id[20:36], server)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE: find by addresses
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false, err
	}
	buf := make([]byte, 1024)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, false, err
	}
	if n < unix.SizeofNlMsghdr {
		return 0, false, errors.New("sock_diag: short reply")
	}
	switch ne.Uint16(buf[4:]) {
	case sockDiagByFamily:
		if n < uidOffset+4 {
			return 0, false, errors.New("sock_diag: short reply")
		}
		// The kernel's lookup falls back to a listening socket on the
		// client's address: only the connected socket itself will do.
		msg := buf[unix.SizeofNlMsghdr:]
		if msg[1] == tcpListen || binary.BigEndian.Uint16(msg[4:]) != uint16(cport) || binary.BigEndian.Uint16(msg[6:]) != uint16(sport) {
			return 0, false, nil
		}
		return int(ne.Uint32(buf[uidOffset:])), true, nil
	case unix.NLMSG_ERROR:
		if n < unix.SizeofNlMsghdr+4 {
			return 0, false, errors.New("sock_diag: short error")
		}
		if errno := unix.Errno(-int32(ne.Uint32(buf[unix.SizeofNlMsghdr:]))); errno != unix.ENOENT {
			return 0, false, fmt.Errorf("sock_diag: %w", errno)
		}
		return 0, false, nil // no such socket: the client is gone
	}
	return 0, false, errors.New("sock_diag: unexpected reply")
}

// procRoot is where the kernel lists its TCP sockets.
const procRoot = "/proc/net/"

// procLookup finds the client's end in /proc/net/tcp (tcp6): the line
// whose "local_address rem_address" are the client's and the server's.
func procLookup(local, remote *net.TCPAddr) (int, bool) {
	c4, s4 := remote.IP.To4(), local.IP.To4()
	if c4 != nil && s4 != nil {
		if uid, ok := search("tcp", c4, remote.Port, s4, local.Port); ok {
			return uid, true
		}
	}
	c16, s16 := remote.IP.To16(), local.IP.To16()
	if c16 == nil || s16 == nil {
		return 0, false
	}
	return search("tcp6", c16, remote.Port, s16, local.Port)
}

// search scans one table. Addresses are printed as each 32-bit word of
// the address in the machine's byte order, the port big-endian.
func search(table string, client net.IP, cport int, server net.IP, sport int) (int, bool) {
	f, err := os.Open(procRoot + table)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return find(f, []byte(hexAddr(client, cport)+" "+hexAddr(server, sport)))
}

func hexAddr(ip net.IP, port int) string {
	var b []byte
	for i := 0; i < len(ip); i += 4 {
		b = fmt.Appendf(b, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	return fmt.Sprintf("%s:%04X", b, port)
}

// find scans a table for the line whose addresses are want and returns
// its uid column. A line: "sl local rem st tx:rx tr:when retrnsmt uid ...".
func find(f *os.File, want []byte) (int, bool) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 512), 4096)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 8 {
			continue
		}
		if len(fields[1])+1+len(fields[2]) != len(want) || !bytes.HasPrefix(want, fields[1]) || !bytes.Equal(want[len(fields[1])+1:], fields[2]) {
			continue
		}
		uid, err := strconv.Atoi(string(fields[7]))
		return uid, err == nil
	}
	return 0, false
}
