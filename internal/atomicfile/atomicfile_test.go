package atomicfile_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/atomicfile"
)

// content returns a fill that writes s.
func content(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func writeFile(t *testing.T, path, s string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), perm); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is subject to the umask; set it exactly.
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func checkFile(t *testing.T, path, want string, wantPerm os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode(); got != wantPerm {
		t.Errorf("%s has mode %v, want %v", path, got, wantPerm)
	}
}

// noTemp fails if dir holds a temp file.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), atomicfile.TempPrefix) {
			t.Errorf("temp file %s left in %s", e.Name(), dir)
		}
	}
}

func TestWriteNewFile(t *testing.T) {
	tests := []struct {
		name string
		perm os.FileMode
		want os.FileMode
	}{
		{name: "DefaultPerm", perm: 0, want: 0o644},
		{name: "Perm0600", perm: 0o600, want: 0o600},
		{name: "Perm0755", perm: 0o755, want: 0o755},
		{name: "Perm0666IgnoresUmask", perm: 0o666, want: 0o666},
		{name: "SetuidDropped", perm: os.ModeSetuid | 0o755, want: 0o755},
	}
	for _, tt := range tests {
		for mode, modeName := range map[atomicfile.Mode]string{atomicfile.Replace: "Replace", atomicfile.CreateNew: "CreateNew"} {
			t.Run(modeName+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "new.txt")
				res, err := write(t, path, atomicfile.Options{Mode: mode, Perm: tt.perm}, content("hello"))
				if err != nil {
					t.Fatal(err)
				}
				checkFile(t, path, "hello", tt.want)
				if got, want := res.Mode, tt.want; got != want {
					t.Errorf("Result.Mode = %v, want %v", got, want)
				}
				noTemp(t, dir)
			})
		}
	}
}

func TestWriteKeepsMode(t *testing.T) {
	for _, perm := range []os.FileMode{0o755, 0o600, 0o640} {
		t.Run(perm.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			writeFile(t, path, "old", perm)
			res, err := write(t, path, atomicfile.Options{Perm: 0o644}, content("new"))
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, path, "new", perm)
			if got, want := res.Mode, perm; got != want {
				t.Errorf("Result.Mode = %v, want %v", got, want)
			}
			noTemp(t, dir)
		})
	}
}

func TestWriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old", 0o644)
	const uid, gid = 12345, 23456
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if _, err := write(t, path, atomicfile.Options{}, content("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != uid || st.Gid != gid {
		t.Errorf("owner %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
}

func TestCreateNewExisting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old", 0o600)
	called := false
	_, err := write(t, path, atomicfile.Options{Mode: atomicfile.CreateNew}, func(w io.Writer) error {
		called = true
		return content("new")(w)
	})
	if !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	if called {
		t.Error("fill was called although the target existed")
	}
	checkFile(t, path, "old", 0o600)
	noTemp(t, dir)
}

// TestCreateNewRace checks the no-replace rename itself: the target appears
// while the content is streamed, after the early existence check.
func TestCreateNewRace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	_, err := write(t, path, atomicfile.Options{Mode: atomicfile.CreateNew}, func(w io.Writer) error {
		writeFile(t, path, "other", 0o600)
		return content("new")(w)
	})
	if !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	checkFile(t, path, "other", 0o600)
	noTemp(t, dir)
}

func TestCreateNewConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = write(t, path, atomicfile.Options{Mode: atomicfile.CreateNew}, content(strings.Repeat("x", 1<<16)))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, atomicfile.ErrExists):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d writers created the file, want exactly 1", won)
	}
	noTemp(t, dir)
}

func TestFillError(t *testing.T) {
	errFill := errors.New("client went away")
	tests := []struct {
		name     string
		existing bool
	}{
		{name: "ExistingTarget", existing: true},
		{name: "NewTarget", existing: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tt.existing {
				writeFile(t, path, "old", 0o644)
			}
			_, err := write(t, path, atomicfile.Options{}, func(w io.Writer) error {
				io.WriteString(w, strings.Repeat("partial", 100000))
				return errFill
			})
			if !errors.Is(err, errFill) {
				t.Fatalf("err = %v, want the fill error", err)
			}
			if tt.existing {
				checkFile(t, path, "old", 0o644)
			} else if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("target exists after a failed write (%v)", err)
			}
			noTemp(t, dir)
		})
	}
}

func TestFillPanic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old", 0o644)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic in fill did not propagate")
			}
		}()
		write(t, path, atomicfile.Options{}, func(w io.Writer) error { panic("boom") })
	}()
	checkFile(t, path, "old", 0o644)
	noTemp(t, dir)
}

func TestResult(t *testing.T) {
	// Many writes of odd sizes, across the internal buffer size, as a
	// streaming caller would do; an append copies the old file first.
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old content\n", 0o644)
	var want bytes.Buffer
	want.WriteString("old content\n")
	var chunks [][]byte
	for i := range 300 {
		chunks = append(chunks, bytes.Repeat([]byte{byte('a' + i%26)}, 1+i*37))
		want.Write(chunks[i])
	}
	res, err := write(t, path, atomicfile.Options{}, func(w io.Writer) error {
		old, err := os.Open(path)
		if err != nil {
			return err
		}
		defer old.Close()
		if _, err := io.Copy(w, old); err != nil {
			return err
		}
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want.Bytes())
	if got, want := res.SHA256, hex.EncodeToString(sum[:]); got != want {
		t.Errorf("SHA256 = %s, want %s", got, want)
	}
	if got, want := res.Bytes, int64(want.Len()); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
	checkFile(t, path, want.String(), 0o644)
}

// A file of several MiB, written in pieces of a MiB and odd sizes as a
// finalize streams a large session, is written whole: asking the kernel to
// write back along the way changes nothing in it.
func TestLargeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	var want bytes.Buffer
	for i := range 10 {
		want.Write(bytes.Repeat([]byte{byte('a' + i)}, 1<<20-i*4093))
	}
	res, err := write(t, path, atomicfile.Options{}, func(w io.Writer) error {
		b := want.Bytes()
		for len(b) > 0 {
			n, err := w.Write(b[:min(len(b), 1<<20)])
			if err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want.Bytes())
	if got, want := res.SHA256, hex.EncodeToString(sum[:]); got != want {
		t.Errorf("SHA256 = %s, want %s", got, want)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the file holds %d bytes, not the %d written", len(got), want.Len())
	}
}

func TestEmptyContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old", 0o644)
	res, err := write(t, path, atomicfile.Options{}, func(io.Writer) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.SHA256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("SHA256 = %s, want %s", got, want)
	}
	checkFile(t, path, "", 0o644)
}

// TestTempName checks where the temp file lives and how it is named while
// fill runs, since CleanTemp relies on it.
func TestTempName(t *testing.T) {
	tests := []struct {
		name string
		tag  string
		base string
	}{
		{name: "Tagged", tag: "sess-1", base: "main.go"},
		{name: "Untagged", tag: "", base: "main.go"},
		{name: "LongBase", tag: strings.Repeat("t", 64), base: strings.Repeat("é", 127)}, // 254 bytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.base)
			var seen []string
			_, err := write(t, path, atomicfile.Options{Tag: tt.tag}, func(w io.Writer) error {
				entries, err := os.ReadDir(dir)
				if err != nil {
					return err
				}
				for _, e := range entries {
					seen = append(seen, e.Name())
					fi, err := e.Info()
					if err != nil {
						return err
					}
					if got, want := fi.Mode(), os.FileMode(0o600); got != want {
						t.Errorf("temp file has mode %v while being written, want %v", got, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 1 {
				t.Fatalf("dir held %q during fill, want one temp file", seen)
			}
			name := seen[0]
			if prefix := atomicfile.TempPrefix + tt.tag + "-"; !strings.HasPrefix(name, prefix) {
				t.Errorf("temp name %q does not start with %q", name, prefix)
			}
			if len(name) > 255 {
				t.Errorf("temp name is %d bytes long", len(name))
			}
			if len(tt.base) < 100 && !strings.HasSuffix(name, "-"+tt.base) {
				t.Errorf("temp name %q does not end with -%s", name, tt.base)
			}
		})
	}
}

// TestTempNeverFollowsSymlink plants a symlink at the next temp name, as
// another user of a shared directory could, and checks that Write neither
// writes through it nor removes it.
func TestTempNeverFollowsSymlink(t *testing.T) {
	tokens := []string{"planted", "fresh"}
	restore := atomicfile.SetRandomToken(func() string {
		tok := tokens[0]
		tokens = tokens[1:]
		return tok
	})
	defer restore()

	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "precious", 0o644)
	trap := filepath.Join(dir, atomicfile.TempPrefix+"-planted-f")
	if err := os.Symlink(victim, trap); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	if _, err := write(t, path, atomicfile.Options{}, content("new")); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "new", 0o644)
	checkFile(t, victim, "precious", 0o644)
	if fi, err := os.Lstat(trap); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("planted symlink was disturbed (%v)", err)
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		opts atomicfile.Options
	}{
		{name: "TargetIsDirectory", path: sub},
		{name: "TagWithSlash", path: filepath.Join(dir, "f"), opts: atomicfile.Options{Tag: "a/b"}},
		{name: "TagTooLong", path: filepath.Join(dir, "f"), opts: atomicfile.Options{Tag: strings.Repeat("t", 65)}},
		{name: "UnknownMode", path: filepath.Join(dir, "f"), opts: atomicfile.Options{Mode: 7}},
		{name: "TargetIsFIFO", path: fifo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := write(t, tt.path, tt.opts, content("x")); err == nil {
				t.Fatal("Write succeeded, want an error")
			}
			noTemp(t, dir)
			if _, err := os.Lstat(filepath.Join(dir, "f")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("target created despite the error (%v)", err)
			}
		})
	}
}

func TestCleanTemp(t *testing.T) {
	names := []string{
		atomicfile.TempPrefix + "sess1-0123abcd-main.go",
		atomicfile.TempPrefix + "sess1-4567abcd-other.go",
		atomicfile.TempPrefix + "sess12-89abcdef-main.go",
		atomicfile.TempPrefix + "-fedcba98-untagged.txt",
		"main.go",
		"sess1.txt",
	}
	tests := []struct {
		name string
		tag  string
		want []string // removed
	}{
		{name: "Tag", tag: "sess1", want: names[:2]},
		{name: "OtherTag", tag: "sess12", want: names[2:3]},
		{name: "UnknownTag", tag: "nope", want: nil},
		{name: "All", tag: "", want: names[:4]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range names {
				writeFile(t, filepath.Join(dir, n), "x", 0o644)
			}
			// A directory that looks like a temp file is not ours.
			if err := os.Mkdir(filepath.Join(dir, atomicfile.TempPrefix+"dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := cleanTemp(t, dir, tt.tag)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("CleanTemp(%q) removed %q, want %q", tt.tag, got, tt.want)
			}
			for _, n := range append(names, atomicfile.TempPrefix+"dir") {
				_, err := os.Lstat(filepath.Join(dir, n))
				removed := errors.Is(err, os.ErrNotExist)
				wantRemoved := false
				for _, w := range tt.want {
					wantRemoved = wantRemoved || w == n
				}
				if removed != wantRemoved {
					t.Errorf("%s: removed = %v, want %v", n, removed, wantRemoved)
				}
			}
		})
	}
}

// TestCleanTempAfterCrash removes the temp file a Write left behind when
// its process died during fill (simulated by leaving fill blocked).
func TestCleanTempAfterCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old", 0o644)
	inFill := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := write(t, path, atomicfile.Options{Tag: "s1"}, func(w io.Writer) error {
			io.WriteString(w, "partial")
			close(inFill)
			<-release
			return nil
		})
		done <- err
	}()
	<-inFill
	removed, err := cleanTemp(t, dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 {
		t.Fatalf("CleanTemp removed %q, want the one temp file", removed)
	}
	close(release)
	// The writer whose temp file vanished must fail, not report success.
	if err := <-done; err == nil {
		t.Error("Write succeeded after its temp file was removed")
	}
	checkFile(t, path, "old", 0o644)
}

// A staged write leaves the target alone until Commit, and Discard leaves
// nothing behind: what a transaction relies on to stage every file first.
func TestStageCommitAndDiscard(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeFile(t, a, "old a\n", 0o600)

	sa, err := stage(t, a, atomicfile.Options{Tag: "tx1"}, content("new a\n"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := stage(t, b, atomicfile.Options{Mode: atomicfile.CreateNew, Tag: "tx1"}, content("new b\n"))
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, a, "old a\n", 0o600)
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b exists before commit: %v", err)
	}
	if _, err := os.Stat(sa.TempPath()); err != nil {
		t.Fatalf("staged temp file: %v", err)
	}
	res, err := sa.Commit()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("new a\n"))
	if res.SHA256 != hex.EncodeToString(sum[:]) || res.Bytes != 6 {
		t.Errorf("commit result %+v", res)
	}
	checkFile(t, a, "new a\n", 0o600)
	if _, err := sa.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	sb.Discard()
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b exists after discard: %v", err)
	}
	noTemp(t, dir)
}

// A CreateNew stage whose target appears before Commit fails at Commit and
// keeps the file that appeared.
func TestStageCreateNewLosesRace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "new.txt")
	s, err := stage(t, p, atomicfile.Options{Mode: atomicfile.CreateNew}, content("mine\n"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "theirs\n", 0o644)
	if _, err := s.Commit(); !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("Commit = %v, want ErrExists", err)
	}
	checkFile(t, p, "theirs\n", 0o644)
	noTemp(t, dir)
}
