// Package tcppeer finds which local user holds the other end of a TCP
// connection on this machine, for a loopback server that shares its
// connections fairly between users.
//
// TCP carries no credentials, unlike a Unix socket (SO_PEERCRED). On
// Linux both ends of a loopback connection are sockets of one network
// namespace, each with the uid that owns it: the client's end is the
// socket whose local address is the connection's remote one and whose
// remote address is the connection's local one. The kernel is asked for
// that one socket over sock_diag (netlink, as ss does), an exact lookup
// that costs the same with 10 sockets or 10,000; where netlink is not
// available, /proc/net/tcp (tcp6 for IPv6) lists the same, at the cost of
// reading every socket's line, which a flood of connections makes slow.
// Elsewhere the owner is unknown.
package tcppeer

import "net"

// UID returns the uid that owns the client's end of c, a connection a
// server accepted, when this system says so: on Linux, for a peer in the
// server's network namespace that is still connected. ok is false
// otherwise (another system, another namespace or machine, a peer already
// gone).
func UID(c net.Conn) (uid int, ok bool) {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return 0, false
	}
	return lookup(local, remote)
}
