package paths_test

import (
	"fmt"
	"os"
	"path/filepath"
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
