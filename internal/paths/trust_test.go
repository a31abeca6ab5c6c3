package paths_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/paths"
)

// otherUID is a uid no test process runs as.
const otherUID = 54321

func TestTrustDir(t *testing.T) {
	uid := os.Getuid()
	tests := []struct {
		name  string
		mode  fs.FileMode
		owner int // -1: ours
		want  string
	}{
		{"Private", 0o700, -1, ""},
		{"ReadableByOthers", 0o755, -1, ""},
		{"WritableByOthers", 0o777, -1, "writable by others"},
		{"WritableByGroup", 0o770, -1, "writable by others"},
		{"Sticky", 0o777 | fs.ModeSticky, -1, ""},
		{"AnotherUsers", 0o700, otherUID, "belongs to uid 54321"},
		{"AnotherUsersSticky", 0o777 | fs.ModeSticky, otherUID, "belongs to uid 54321"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "orion")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			if tt.owner >= 0 {
				if uid != 0 {
					t.Skip("chown needs root")
				}
				if err := os.Chown(dir, tt.owner, tt.owner); err != nil {
					t.Fatal(err)
				}
			}
			err := paths.TrustDir(dir, uid)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("TrustDir: %v", err)
				}
				return
			}
			if !errors.Is(err, paths.ErrUntrustedSocket) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
				t.Fatalf("TrustDir: %v; want a refusal saying %q and what to set", err, tt.want)
			}
		})
	}
}

func TestTrustSocket(t *testing.T) {
	dir, err := paths.SocketTempDir("trust", "s.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	if err := paths.TrustSocket(sock, os.Getuid()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no socket: %v, want not exist", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := paths.TrustSocket(sock, os.Getuid()); err != nil {
		t.Fatalf("our own socket: %v", err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := paths.TrustPeer(c.(*net.UnixConn), os.Getuid()); err != nil {
		t.Fatalf("our own listener: %v", err)
	}
	if err := paths.TrustPeer(c.(*net.UnixConn), otherUID); !errors.Is(err, paths.ErrUntrustedSocket) {
		t.Fatalf("a listener of another uid: %v", err)
	}
	plain := filepath.Join(dir, "file")
	os.WriteFile(plain, nil, 0o600)
	if err := paths.TrustSocket(plain, os.Getuid()); !errors.Is(err, paths.ErrUntrustedSocket) {
		t.Fatalf("a regular file: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("chown needs root")
	}
	if err := os.Lchown(sock, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	if err := paths.TrustSocket(sock, os.Getuid()); !errors.Is(err, paths.ErrUntrustedSocket) || !strings.Contains(err.Error(), "belongs to uid 54321") {
		t.Fatalf("another user's socket: %v", err)
	}
}
