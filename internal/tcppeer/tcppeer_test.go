package tcppeer_test

import (
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/orion-agent/orion/internal/tcppeer"
)

// The client's end of a loopback connection is this process's, for each
// way a listener and a client meet: IPv4, IPv6, and IPv4 on a dual-stack
// listener.
func TestUID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the owner of a TCP peer is known on Linux only")
	}
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
			uid, ok := tcppeer.UID(server)
			if !ok || uid != os.Getuid() {
				t.Errorf("UID = %d, %v; want %d, true", uid, ok, os.Getuid())
			}
		})
	}
}

// A peer that is gone is unknown, not someone else.
func TestUIDGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client.(*net.TCPConn).SetLinger(0) // RST: the client's end leaves the table at once
	client.Close()
	if uid, ok := tcppeer.UID(server); ok {
		t.Errorf("UID of a closed peer = %d, want unknown", uid)
	}
}
