// Package corpus measures the validate package's detectors on real files
// that nobody on this team wrote: it gathers files of the checked types from
// directories the machine already has (the Go distribution, the Go module
// cache, installed npm packages, system data files), truncates each at
// random byte offsets, and counts how many truncated copies are caught
// (true positives) and how many untouched originals are flagged (false
// positives), per file type.
package corpus

import (
	"cmp"
	"context"
	"hash/fnv"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orion-agent/orion/internal/validate"
)

// Source is a directory to gather files from.
type Source struct {
	// Name labels the source in the output ("goroot", "npm").
	Name string
	Dir  string
}

// File is one gathered file.
type File struct {
	Source string
	Path   string
	Type   validate.FileType
	Data   []byte
}

// GatherOptions bound what Gather collects.
type GatherOptions struct {
	// MaxBytes skips larger files; 0 means 256 KiB.
	MaxBytes int64
	// PerType is the most files kept per file type, sampled at random
	// with Seed; 0 means 400.
	PerType int
	Seed    uint64
}

// skipDirs are directories never entered: VCS metadata, and caches that
// hold archives rather than files.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "cache": true}

// fixtureWords mark test fixtures that are broken on purpose (a parser's
// "invalid" or "fail" cases). They are excluded: an original that is meant
// to be rejected is not a false positive. The rule looks at the words of
// the path only (split at / . _ -), never at content.
var fixtureWords = map[string]bool{
	"invalid": true, "fail": true, "fails": true, "failing": true, "failure": true, "bad": true,
	"broken": true, "malformed": true, "illegal": true, "corrupt": true, "corrupted": true,
	"reject": true, "rejected": true,
}

// isFixture reports whether a path names a deliberately broken test file.
// Go files under testdata/ count too: the go tool never builds them, and
// many are compiler error tests.
func isFixture(path string, t validate.FileType) bool {
	lower := strings.ToLower(filepath.ToSlash(path))
	words := strings.FieldsFunc(lower, func(r rune) bool { return r == '/' || r == '.' || r == '_' || r == '-' })
	for _, w := range words {
		if fixtureWords[w] {
			return true
		}
	}
	return t == validate.TypeGo && strings.Contains(lower, "/testdata/")
}

// Gather walks the sources and returns a sample of at most PerType files of
// each checked type, in a stable order. Files of no checked type, empty
// files, files over MaxBytes, duplicates (same content) and fixtures are
// skipped. Symbolic links are not followed.
func Gather(ctx context.Context, sources []Source, opts GatherOptions) ([]File, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 256 << 10
	}
	if opts.PerType <= 0 {
		opts.PerType = 400
	}
	type cand struct {
		source, path string
		t            validate.FileType
	}
	byType := make(map[validate.FileType][]cand)
	seen := make(map[string]bool) // real paths: sources may overlap
	for _, s := range sources {
		err := filepath.WalkDir(s.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable entries are skipped, not fatal
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() {
				if skipDirs[d.Name()] && path != s.Dir {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || seen[path] {
				return nil
			}
			seen[path] = true
			t := validate.Detect(path, nil)
			if t == validate.TypeText || isFixture(path, t) {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.Size() == 0 || info.Size() > opts.MaxBytes {
				return nil
			}
			byType[t] = append(byType[t], cand{s.Name, path, t})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	var files []File
	sums := make(map[uint64]bool)
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		cs := byType[t]
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(a.path, b.path) })
		rng := rand.New(rand.NewPCG(opts.Seed, hashString(string(t))))
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		kept := 0
		for _, c := range cs {
			if kept == opts.PerType {
				break
			}
			data, err := os.ReadFile(c.path)
			if err != nil || len(data) == 0 {
				continue
			}
			h := hashBytes(data)
			if sums[h] {
				continue
			}
			sums[h] = true
			files = append(files, File{Source: c.source, Path: c.path, Type: c.t, Data: data})
			kept++
		}
	}
	return files, nil
}

func hashString(s string) uint64 { return hashBytes([]byte(s)) }

func hashBytes(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
