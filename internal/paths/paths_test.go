package paths_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/paths"
)

func envOf(m map[string]string) paths.Env {
	return func(k string) string { return m[k] }
}

func TestDefaultSocket(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"Explicit", map[string]string{"ORION_SOCKET": "/x/s.sock", "XDG_RUNTIME_DIR": "/run/user/7"}, "/x/s.sock"},
		{"RuntimeDir", map[string]string{"XDG_RUNTIME_DIR": "/run/user/7"}, "/run/user/7/orion/oriond.sock"},
		{"RelativeRuntimeDirIgnored", map[string]string{"XDG_RUNTIME_DIR": "run"}, filepath.Join(os.TempDir(), fmt.Sprintf("orion-%d", os.Getuid()), "oriond.sock")},
		{"Fallback", map[string]string{}, filepath.Join(os.TempDir(), fmt.Sprintf("orion-%d", os.Getuid()), "oriond.sock")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := paths.DefaultSocket(envOf(tt.env)); got != tt.want {
				t.Fatalf("DefaultSocket() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultStateDir(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"Explicit", map[string]string{"ORION_STATE_DIR": "/s", "XDG_STATE_HOME": "/x"}, "/s"},
		{"XDG", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/orion"},
		{"Home", map[string]string{"HOME": "/h"}, "/h/.local/state/orion"},
		{"RelativeXDGIgnored", map[string]string{"XDG_STATE_HOME": "x", "HOME": "/h"}, "/h/.local/state/orion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := paths.DefaultStateDir(envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("DefaultStateDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSocketTempDir: a throwaway socket's directory is in the temp
// directory when the socket fits there, and somewhere it fits when the
// temp directory is too long for it (a socket there could not be bound).
func TestSocketTempDir(t *testing.T) {
	// t.TempDir() carries the test's name, and the test may itself run
	// in a long TMPDIR: the short one is made in /tmp.
	short, err := os.MkdirTemp("/tmp", "st")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	long := filepath.Join(short, strings.Repeat("a-long-private-temp-directory-", 4))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tmp := range []string{short, long} {
		t.Setenv("TMPDIR", tmp)
		dir, err := paths.SocketTempDir("orion", "s/oriond.sock")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		sock := filepath.Join(dir, "s", "oriond.sock")
		if len(sock) > paths.MaxSocketPath {
			t.Errorf("TMPDIR of %d bytes: socket path of %d bytes, over %d", len(tmp), len(sock), paths.MaxSocketPath)
		}
		if inTmp := strings.HasPrefix(dir, tmp+string(filepath.Separator)); inTmp != (tmp == short) {
			t.Errorf("TMPDIR of %d bytes: directory %s", len(tmp), dir)
		}
		if err := os.Mkdir(filepath.Join(dir, "s"), 0o700); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatalf("TMPDIR of %d bytes: %v", len(tmp), err)
		}
		ln.Close()
	}
}
