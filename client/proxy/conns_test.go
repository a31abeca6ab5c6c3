package proxy_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orion-agent/orion/client/proxy"
)

// A connection past one user's share, or past the total, is answered 503
// and closed; one whose user is unknown counts against the total only;
// a closed connection gives its place back.
func TestLimitConns(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The test dials one connection at a time and says beforehand whose
	// it is: user 7's, or unknown.
	var next atomic.Bool
	userOf := func(net.Conn) (int, bool) { return 7, next.Load() }
	ln := proxy.LimitConns(inner, proxy.ConnLimits{Max: 4, PerUser: 2, UserOf: userOf, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	// dial opens a connection as user 7's (known) or an unknown user's,
	// and returns the server's end, or nil when it was answered 503.
	dial := func(known bool) net.Conn {
		t.Helper()
		next.Store(known)
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := make(chan string, 1)
		go func() {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			got <- line
		}()
		select {
		case s := <-accepted:
			t.Cleanup(func() { s.Close() })
			return s
		case line := <-got:
			if !strings.HasPrefix(line, "HTTP/1.1 503") {
				t.Fatalf("neither accepted nor answered 503: %q", line)
			}
			return nil
		}
	}
	a := dial(true)
	if a == nil || dial(true) == nil {
		t.Fatal("user 7's first two connections were refused")
	}
	if dial(true) != nil {
		t.Fatal("user 7's third connection was accepted, past its share of 2")
	}
	if b, c := dial(false), dial(false); b == nil || c == nil {
		t.Fatal("connections of an unknown user were refused below the total")
	}
	if dial(false) != nil {
		t.Fatal("a fifth connection was accepted, past the total of 4")
	}
	a.Close()
	if dial(true) == nil {
		t.Fatal("user 7 was refused after closing one of its two connections")
	}
}
