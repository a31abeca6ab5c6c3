package tcppeer

import (
	"net"
	"os"
	"testing"
)

// Both ways of asking the kernel agree, for IPv4 and IPv6: sock_diag,
// used first, and the /proc tables, used where sock_diag is missing.
func TestDiagAndProcAgree(t *testing.T) {
	for _, c := range []struct{ name, listen, dial string }{
		{"IPv4", "127.0.0.1:0", "127.0.0.1"},
		{"IPv6", "[::1]:0", "::1"},
		{"IPv4OnDualStack", "[::]:0", "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", c.listen)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", c.listen, err)
			}
			defer ln.Close()
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			client, err := net.Dial("tcp", net.JoinHostPort(c.dial, port))
			if err != nil {
				t.Skipf("cannot dial %s here: %v", c.dial, err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			local, remote := server.LocalAddr().(*net.TCPAddr), server.RemoteAddr().(*net.TCPAddr)
			uid, ok, err := diag(remote, local)
			if err != nil {
				t.Skipf("sock_diag is not available here (%v); the /proc tables are used", err)
			}
			if !ok || uid != os.Getuid() {
				t.Errorf("sock_diag: %d, %v; want %d", uid, ok, os.Getuid())
			}
			if uid, ok := procLookup(local, remote); !ok || uid != os.Getuid() {
				t.Errorf("/proc: %d, %v; want %d", uid, ok, os.Getuid())
			}
			// The server's own end is not the client's.
			if _, ok, _ := diag(local, &net.TCPAddr{IP: remote.IP, Port: remote.Port + 1}); ok {
				t.Errorf("sock_diag found a socket for addresses no socket has")
			}
		})
	}
}
