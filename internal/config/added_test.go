package config_test

import (
	"os"
	"slices"
	"testing"

	"github.com/orion-agent/orion/internal/config"
)

// The roots orionctl allow added read back as written, quotes and all; no
// file is no roots; a file someone edited into nonsense is an error that
// names it, never a root guessed.
func TestAddedRoots(t *testing.T) {
	dir := t.TempDir()
	if roots, err := config.ReadAddedRoots(dir); err != nil || roots != nil {
		t.Fatalf("no file: %q, %v; want none", roots, err)
	}
	want := []string{"/srv/a", `/home/me/with "quotes" and \ back`, "/tmp/ünï"}
	if err := config.WriteAddedRoots(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := config.ReadAddedRoots(dir)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("read back %q, %v; want %q", got, err, want)
	}
	for name, body := range map[string]string{
		"Relative": "allow-root = [\"src\"]\n",
		"Syntax":   "allow-root = [\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(config.AddedRootsPath(dir), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if roots, err := config.ReadAddedRoots(dir); err == nil {
				t.Errorf("%q read as %q", body, roots)
			}
		})
	}
}
