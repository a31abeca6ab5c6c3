package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
	"github.com/orion-agent/orion/internal/confine"
)

// stageFunc is StageHidden or StageHiddenAsync.
type stageFunc func(dir *confine.Dir, name string, opts atomicfile.Options, fill func(w io.Writer) error) (*atomicfile.Staged, error)

// stageHidden stages content for path with stage, skipping the test
// where the file system has no unnamed files, or the kernel no
// asynchronous fsync.
func stageHidden(t *testing.T, stage stageFunc, path string, opts atomicfile.Options, s string) *atomicfile.Staged {
	t.Helper()
	st, err := stage(openDir(t, filepath.Dir(path)), filepath.Base(path), opts, content(s))
	if errors.Is(err, atomicfile.ErrNoHidden) {
		t.Skipf("no unnamed files here: %v", err)
	}
	if errors.Is(err, atomicfile.ErrNoAsync) {
		t.Skipf("no asynchronous fsync here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStageHidden: a hidden stage leaves nothing in the directory until
// Commit, which puts the content in place as Stage's Commit does, and a
// discard leaves nothing at all; the same with the file's sync made by the
// kernel while the caller goes on.
func TestStageHidden(t *testing.T) {
	t.Run("Sync", func(t *testing.T) { testStageHidden(t, atomicfile.StageHidden) })
	t.Run("Async", func(t *testing.T) {
		testStageHidden(t, atomicfile.StageHiddenAsync)
		// Every sync was waited for: their contexts are free again.
		if got := atomicfile.AsyncSyncsInFlight(); got != 0 {
			t.Errorf("%d asynchronous syncs not waited for", got)
		}
	})
}

func testStageHidden(t *testing.T, stage stageFunc) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeFile(t, a, "old a\n", 0o640)

	sa := stageHidden(t, stage, a, atomicfile.Options{Tag: "s1"}, "new a\n")
	sb := stageHidden(t, stage, b, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "s2"}, "new b\n")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "a.txt" {
		t.Fatalf("the directory holds %v (%v) while staged, want only a.txt", entries, err)
	}
	checkFile(t, a, "old a\n", 0o640)
	res, err := sa.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 6 || res.Mode != 0o640 {
		t.Errorf("commit result %+v", res)
	}
	checkFile(t, a, "new a\n", 0o640)
	sb.Discard()
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b exists after discard: %v", err)
	}
	noTemp(t, dir)

	// A CreateNew whose target appeared meanwhile fails at Commit and
	// keeps the file that appeared.
	sc := stageHidden(t, stage, b, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "s3"}, "mine\n")
	writeFile(t, b, "theirs\n", 0o644)
	if _, err := sc.Commit(); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("Commit = %v, want ErrExists", err)
	}
	checkFile(t, b, "theirs\n", 0o644)
	noTemp(t, dir)

	// A CreateNew whose target is still absent is linked in place: no
	// temp name, nothing left beside it.
	c := filepath.Join(dir, "c.txt")
	sd := stageHidden(t, stage, c, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "s4"}, "new c\n")
	if res, err := sd.Commit(); err != nil || res.Bytes != 6 {
		t.Fatalf("Commit = %+v, %v", res, err)
	}
	checkFile(t, c, "new c\n", 0o644)
	noTemp(t, dir)
}

// Several files staged at once each get their sync (and a context of
// their own for it); files staged unhashed carry no hash; and where the
// kernel refuses asynchronous syncs, StageHiddenAsync writes nothing and
// says so, for the caller to stage the file the other way.
func TestStageHiddenAsync(t *testing.T) {
	dir := t.TempDir()
	var staged []*atomicfile.Staged
	for _, name := range []string{"a", "b", "c", "d"} {
		staged = append(staged, stageHidden(t, atomicfile.StageHiddenAsync, filepath.Join(dir, name),
			atomicfile.Options{Mode: atomicfile.CreateNew, Unhashed: name == "a"}, name+"\n"))
	}
	if got := atomicfile.AsyncSyncsInFlight(); got != 4 {
		t.Errorf("%d syncs in flight, want 4", got)
	}
	for i, s := range staged {
		if i == 3 {
			s.Discard()
			continue
		}
		res, err := s.Commit()
		if err != nil {
			t.Fatal(err)
		}
		if unhashed := i == 0; (res.SHA256 == "") != unhashed {
			t.Errorf("file %d: SHA-256 %q (unhashed: %v)", i, res.SHA256, unhashed)
		}
	}
	checkFile(t, filepath.Join(dir, "b"), "b\n", 0o644)
	if _, err := os.Stat(filepath.Join(dir, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("d after its discard: %v", err)
	}
	if got := atomicfile.AsyncSyncsInFlight(); got != 0 {
		t.Errorf("%d syncs not waited for", got)
	}

	defer atomicfile.SetAsyncSyncsOff()()
	_, err := atomicfile.StageHiddenAsync(openDir(t, dir), "e", atomicfile.Options{}, content("e\n"))
	if !errors.Is(err, atomicfile.ErrNoAsync) {
		t.Fatalf("StageHiddenAsync with no asynchronous syncs: %v, want ErrNoAsync", err)
	}
	noTemp(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "e")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("e: %v", err)
	}
}

// CommitSyncing puts the file in place at once and leaves its
// directory's sync under way until the caller waits for it; the wait
// gives what Commit gives. A file staged with a name commits the same way.
func TestCommitSyncing(t *testing.T) {
	if !atomicfile.HasAsyncSyncs() {
		t.Skip("no asynchronous fsync here")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b"), "old b\n", 0o600)
	for _, c := range []struct {
		name, file string
		mode       os.FileMode
		stage      func(file string) *atomicfile.Staged
	}{
		{"Hidden", "a", 0o644, func(file string) *atomicfile.Staged {
			return stageHidden(t, atomicfile.StageHiddenAsync, filepath.Join(dir, file), atomicfile.Options{Mode: atomicfile.CreateNew}, file+"\n")
		}},
		// The mode of the file it replaces is kept.
		{"HiddenOverwrite", "b", 0o600, func(file string) *atomicfile.Staged {
			return stageHidden(t, atomicfile.StageHiddenAsync, filepath.Join(dir, file), atomicfile.Options{}, file+"\n")
		}},
		{"Named", "c", 0o644, func(file string) *atomicfile.Staged {
			s, err := atomicfile.Stage(openDir(t, dir), file, atomicfile.Options{Mode: atomicfile.CreateNew}, content(file+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synced, err := c.stage(c.file).CommitSyncing()
			if err != nil {
				t.Fatal(err)
			}
			want := c.file + "\n"
			// In place before its directory's sync is waited for.
			checkFile(t, filepath.Join(dir, c.file), want, c.mode)
			if got := atomicfile.AsyncSyncsInFlight(); got != 1 {
				t.Errorf("%d syncs under way after CommitSyncing, want the directory's", got)
			}
			res, err := synced()
			if err != nil || res.Bytes != int64(len(want)) || res.Mode != c.mode {
				t.Fatalf("directory synced: %+v, %v", res, err)
			}
			if got := atomicfile.AsyncSyncsInFlight(); got != 0 {
				t.Errorf("%d syncs under way after the wait", got)
			}
			noTemp(t, dir)
		})
	}
}

// A burst of files synced at once takes a context of the kernel's for
// each; once they are done, only a few are kept for later syncs, the rest
// given back to the system, whose supply other programs share.
func TestAsyncSyncsKeepFewContexts(t *testing.T) {
	if !atomicfile.HasAsyncSyncs() {
		t.Skip("no asynchronous fsync here")
	}
	dir := t.TempDir()
	var staged []*atomicfile.Staged
	for i := range 40 {
		name := filepath.Join(dir, "f"+strconv.Itoa(i))
		staged = append(staged, stageHidden(t, atomicfile.StageHiddenAsync, name, atomicfile.Options{Mode: atomicfile.CreateNew}, "x\n"))
	}
	for _, s := range staged {
		if _, err := s.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if got := atomicfile.AsyncSyncsInFlight(); got != 0 {
		t.Errorf("%d syncs not waited for", got)
	}
	if got := atomicfile.FreeAsyncContexts(); got > 16 {
		t.Errorf("%d contexts kept after the burst, want at most 16", got)
	}
}

// BenchmarkAsyncSyncBurst is the cost per file of a burst of files staged
// at once, then committed: past the contexts kept for later syncs, each
// sync's context is given back to the system, which must not delay the
// commit (io_destroy waits out an RCU grace period, tens of milliseconds).
func BenchmarkAsyncSyncBurst(b *testing.B) {
	if !atomicfile.HasAsyncSyncs() {
		b.Skip("no asynchronous fsync here")
	}
	const burst = 40
	dir := b.TempDir()
	d := openDir(b, dir)
	n := 0
	for b.Loop() {
		staged := make([]*atomicfile.Staged, 0, burst)
		for range burst {
			n++
			s, err := atomicfile.StageHiddenAsync(d, "f"+strconv.Itoa(n), atomicfile.Options{Mode: atomicfile.CreateNew}, content("x\n"))
			if err != nil {
				b.Skip(err)
			}
			staged = append(staged, s)
		}
		for _, s := range staged {
			if _, err := s.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/file")
}
