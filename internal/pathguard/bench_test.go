package pathguard_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
)

// BenchmarkResolve is the cost of checking one target eight directories
// deep under home with the default protection: the shape rules look at
// every directory above the target (HEAD, .git), so this is their price.
func BenchmarkResolve(b *testing.B) {
	g, home, target := benchGuard(b, "src", "proj", "internal", "pkg", "a", "b", "c")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Resolve(target, filepath.Join(home, "src", "proj")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveConfigDir is BenchmarkResolve for a target below a
// directory named config, one of a repository's pieces: the git-partial
// rule then reads that directory's parent for the other pieces.
func BenchmarkResolveConfigDir(b *testing.B) {
	g, home, target := benchGuard(b, "src", "proj", "internal", "pkg", "config", "b", "c")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Resolve(target, filepath.Join(home, "src", "proj")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckScopedAgain is a request's later check of its target (read,
// then written, after it was resolved): the scope answers the rules read by
// path from the first check, and only the git-partial rule looks again.
func BenchmarkCheckScopedAgain(b *testing.B) {
	g, _, target := benchGuard(b, "src", "proj")
	open := func(string) (pathguard.DirReader, error) { return nil, nil }
	s := pathguard.NewScope()
	if _, err := g.ResolveIn(s, target, ""); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := g.CheckProtectedScoped(s, target, open); err != nil {
			b.Fatal(err)
		}
	}
}

// benchGuard is a guard with the default protection over a home made in a
// temp dir, and a file target in the directory below it that elems name.
func benchGuard(b *testing.B, elems ...string) (*pathguard.Guard, string, string) {
	b.Helper()
	home, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(append([]string{home}, elems...)...)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	g, err := pathguard.NewProtected([]string{home}, pathguard.Protection{Default: pathguard.DefaultProtected(home), Home: home,
		PathDirs: pathguard.PathDirs(os.Getenv("PATH"), home)})
	if err != nil {
		b.Fatal(err)
	}
	return g, home, filepath.Join(dir, "file.go")
}
