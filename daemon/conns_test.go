package daemon

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestLogEvery(t *testing.T) {
	var l logEvery
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at   time.Duration
		n    int
		logs bool
	}{
		{0, 1, true},
		{time.Second, 0, false},
		{5 * time.Second, 0, false},
		{logInterval, 3, true},
		{logInterval + time.Millisecond, 0, false},
		{3 * logInterval, 2, true},
	}
	for i, s := range steps {
		n, ok := l.note(t0.Add(s.at))
		if n != s.n || ok != s.logs {
			t.Fatalf("step %d: note = %d, %v; want %d, %v", i, n, ok, s.n, s.logs)
		}
	}
}

func TestConnectionLimit(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name       string
		configured int
		nofile     uint64
		want       int
	}{
		{"Default", 0, 1 << 20, DefaultMaxConnections},
		{"LowFDs", 0, 256, 96},
		{"TinyFDs", 0, 16, minConnections},
		{"Unknown", 0, 0, DefaultMaxConnections},
		{"ConfiguredKept", 5000, 256, 5000},
		{"Configured", 10, 1 << 20, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := connectionLimit(tt.configured, tt.nofile, log); got != tt.want {
				t.Fatalf("connectionLimit(%d, %d) = %d, want %d", tt.configured, tt.nofile, got, tt.want)
			}
		})
	}
}

func TestTransientAccept(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}, true},
		{&net.OpError{Op: "accept", Err: net.ErrClosed}, false},
		{errors.New("something else"), false},
	} {
		if got := transientAccept(tt.err); got != tt.want {
			t.Errorf("transientAccept(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
