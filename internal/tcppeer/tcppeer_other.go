//go:build !linux

package tcppeer

import "net"

func lookup(local, remote *net.TCPAddr) (int, bool) { return 0, false }
