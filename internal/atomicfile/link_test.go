package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
)

// TestLinkNoReplace covers the fallback used where renameat2 or
// renameatx_np is unsupported.
func TestLinkNoReplace(t *testing.T) {
	tests := []struct {
		name     string
		existing bool
		wantErr  error
		want     string
	}{
		{name: "OK", want: "new"},
		{name: "ErrExists", existing: true, wantErr: atomicfile.ErrExists, want: "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp, path := filepath.Join(dir, atomicfile.TempPrefix+"x"), filepath.Join(dir, "f")
			writeFile(t, tmp, "new", 0o644)
			if tt.existing {
				writeFile(t, path, "old", 0o644)
			}
			err := atomicfile.LinkNoReplace(tmp, path)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			checkFile(t, path, tt.want, 0o644)
			if tt.wantErr == nil {
				if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("old name still exists after the move (%v)", err)
				}
			}
		})
	}
}
