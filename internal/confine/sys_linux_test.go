package confine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The kernel's name of an open directory is compared where it is, a short
// name on the stack and a long one (past the stack's buffer) the usual
// way: both say the directory is still at its path, and neither once it
// moved.
func TestKernelPathIs(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := base
	for len(long) < 700 {
		long = filepath.Join(long, strings.Repeat("d", 60))
	}
	for _, c := range []struct{ name, dir string }{
		{"Short", filepath.Join(base, "short")},
		{"Long", long},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.MkdirAll(c.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(c.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if same, named := kernelPathIs(f, c.dir); !same || !named {
				t.Fatalf("kernelPathIs(%s) = %v, %v before the move, want true, true", c.dir, same, named)
			}
			if same, _ := kernelPathIs(f, c.dir+"x"); same {
				t.Errorf("kernelPathIs names %s also as %sx", c.dir, c.dir)
			}
			moved := c.dir + ".moved"
			if err := os.Rename(c.dir, moved); err != nil {
				t.Fatal(err)
			}
			if same, named := kernelPathIs(f, c.dir); same || !named {
				t.Errorf("kernelPathIs(%s) = %v, %v once moved, want false, true", c.dir, same, named)
			}
			if same, _ := kernelPathIs(f, moved); !same {
				t.Errorf("kernelPathIs(%s) = false for where it moved", moved)
			}
		})
	}
}

// BenchmarkKernelPath is the look a request's view takes before each use
// of a directory it keeps: through /proc/self/fd opened once, with the
// name compared on the stack (Is), against the name read onto the heap
// through the path /proc/self/fd/N (Read).
func BenchmarkKernelPath(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.Run("Is", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if same, _ := kernelPathIs(f, dir); !same {
				b.Fatal("not named as opened")
			}
		}
	})
	b.Run("Read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if real, _ := kernelPath(f); real != dir {
				b.Fatal("not named as opened")
			}
		}
	})
}
