package atomicfile_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
)

// streamHidden starts a Streamed file in dir, skipping the test where the
// file system has no unnamed files.
func streamHidden(t *testing.T, dir string) *atomicfile.Streamed {
	t.Helper()
	s, err := atomicfile.StreamHidden(openDir(t, dir))
	if errors.Is(err, atomicfile.ErrNoHidden) {
		t.Skipf("no unnamed files here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestStreamed: pieces written out of order, from several goroutines, and
// more than the content (text after its end): Stage keeps exactly the
// content's bytes, with the existing target's mode, and nothing is in the
// directory before Commit. A Streamed file closed instead leaves nothing.
func TestStreamed(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	writeFile(t, a, "old a\n", 0o750)
	content := strings.Repeat("0123456789abcdef", 1<<18) // 4 MiB: a write-back request on the way
	s := streamHidden(t, dir)
	const piece = 256 << 10
	var wg sync.WaitGroup
	for off := len(content) - piece; off >= 0; off -= piece {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.WriteAt([]byte(content[off:off+piece]), int64(off)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := s.WriteAt([]byte("not content\n"), int64(len(content))); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stage(openDir(t, dir), "a.txt", atomicfile.Options{Tag: "s1", SHA256: sumOf(content)}, int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, a, "old a\n", 0o750)
	noTemp(t, dir)
	res, err := st.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != int64(len(content)) || res.SHA256 != sumOf(content) || res.Mode != 0o750 {
		t.Errorf("commit result %+v", res)
	}
	checkFile(t, a, content, 0o750)
	noTemp(t, dir)

	dropped := streamHidden(t, dir)
	if err := dropped.WriteAt([]byte("dropped\n"), 0); err != nil {
		t.Fatal(err)
	}
	dropped.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("after Close the directory holds %v", entries)
	}
}

// TestStreamedStageRefuses: fewer bytes streamed than the content, no hash,
// or a CreateNew whose target exists: Stage fails, and the target and the
// directory are as they were.
func TestStreamedStageRefuses(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "b.txt")
	writeFile(t, b, "theirs\n", 0o644)
	for _, tc := range []struct {
		name string
		opts atomicfile.Options
		size int64
	}{
		{"Short", atomicfile.Options{SHA256: sumOf("0123456789")}, 10},
		{"NoSum", atomicfile.Options{}, 5},
		{"Exists", atomicfile.Options{Mode: atomicfile.CreateNew, SHA256: sumOf("01234")}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := streamHidden(t, dir)
			if err := s.WriteAt([]byte("01234"), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stage(openDir(t, dir), "b.txt", tc.opts, tc.size); err == nil {
				t.Fatal("Stage succeeded")
			} else if tc.name == "Exists" && !errors.Is(err, atomicfile.ErrExists) {
				t.Fatalf("Stage = %v, want ErrExists", err)
			}
			checkFile(t, b, "theirs\n", 0o644)
			noTemp(t, dir)
		})
	}
}
