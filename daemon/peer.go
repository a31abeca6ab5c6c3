package daemon

import "strconv"

// Peer is who sent a request: the process at the other end of its
// connection, as the kernel named it when the connection was accepted
// (SO_PEERCRED, LOCAL_PEERCRED on macOS). Handlers see a Peer, never the
// connection: what they may know of the transport is who asks.
type Peer struct {
	// UID is the peer's user; the daemon serves its own user only.
	UID int
	// PID is the peer process, 0 when unknown.
	PID int
	// Name is the peer process's name (its comm, as ps shows it), "" when
	// unknown; the sessions it begins record it.
	Name string

	// conn is the connection the request came by: where trace.follow
	// sends its events and what the per-connection bounds count. nil for
	// a request that came by none (tests).
	conn *conn
}

// Client is the owner the per-client session caps count the peer's
// sessions against: its process; "" (when unknown) is counted against the
// daemon's cap only.
func (p Peer) Client() string {
	if p.PID <= 0 {
		return ""
	}
	return "pid " + strconv.Itoa(p.PID)
}
