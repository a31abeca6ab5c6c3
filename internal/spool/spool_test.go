package spool_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/spool"
)

// Most tests run the spool on a fake clock: settling is observed on the
// Spool's clock, so a test moves it past Settle and the import happens
// inside Advance. Where a test needs fsnotify to notice a change, it polls
// with a deadline, advancing the fake clock each round.

const (
	settle   = 200 * time.Millisecond
	deadline = 10 * time.Second
)

const validMeta = `{"intent":"add a plan","target_file":"/home/me/proj/plan.md","operation":"create","created_at":"2026-01-04T10:00:00.000Z"}`

type harness struct {
	t     *testing.T
	root  string
	clk   *clock.Fake
	s     *spool.Spool
	mu    sync.Mutex
	calls []spool.Entry   // every importFn call
	probs []spool.Problem // every onProblem call
	// content read through Entry.Open during each import
	contents []string
	// fail, when set, decides importFn's result per call number (1-based).
	fail func(n int, e spool.Entry) error
}

func newHarness(t *testing.T, opts spool.Options) *harness {
	t.Helper()
	h := &harness{t: t, root: filepath.Join(t.TempDir(), "spool"), clk: clock.NewFake(time.Date(2026, 1, 4, 10, 0, 0, 0, time.UTC))}
	if err := os.MkdirAll(h.root, 0o700); err != nil {
		t.Fatal(err)
	}
	if opts.Clock == nil && opts.Now == nil {
		opts.Clock = h.clk
	}
	if opts.Settle == 0 {
		opts.Settle = settle
	}
	h.start(opts)
	return h
}

// start creates the Spool; tests that need entries present at start create
// them first through a harness made with newStopped.
func (h *harness) start(opts spool.Options) {
	h.t.Helper()
	s, err := spool.New(h.root, h.importFn, h.onProblem, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.s = s
	h.t.Cleanup(func() { s.Close() })
}

func newStopped(t *testing.T) *harness {
	h := &harness{t: t, root: filepath.Join(t.TempDir(), "spool"), clk: clock.NewFake(time.Date(2026, 1, 4, 10, 0, 0, 0, time.UTC))}
	if err := os.MkdirAll(h.root, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) importFn(e spool.Entry) error {
	h.mu.Lock()
	h.calls = append(h.calls, e)
	n := len(h.calls)
	fail := h.fail
	h.mu.Unlock()
	if fail != nil {
		if err := fail(n, e); err != nil {
			return err
		}
	}
	r, err := e.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.contents = append(h.contents, string(b))
	h.mu.Unlock()
	return nil
}

func (h *harness) onProblem(p spool.Problem) {
	h.mu.Lock()
	h.probs = append(h.probs, p)
	h.mu.Unlock()
}

func (h *harness) counts() (calls, imported, probs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls), len(h.contents), len(h.probs)
}

func (h *harness) problems() []spool.Problem {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]spool.Problem(nil), h.probs...)
}

// until advances the fake clock by Settle until cond holds, failing at the
// deadline. The short pause between rounds lets fsnotify's goroutine run.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			calls, imported, _ := h.counts()
			h.t.Fatalf("timed out waiting for %s (import calls %d, imported %d, problems %v)", what, calls, imported, h.problems())
		}
		h.clk.Advance(settle)
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) rescan() {
	h.t.Helper()
	if err := h.s.Rescan(); err != nil {
		h.t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeEntry writes an entry; an empty meta or content leaves that file out.
func writeEntry(t *testing.T, root, id, meta, content string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if meta != "" {
		writeFile(t, filepath.Join(dir, spool.MetadataFile), meta)
	}
	if content != "" {
		writeFile(t, filepath.Join(dir, spool.ContentFile), content)
	}
	return dir
}

// tree records every file under dir with its mode, modification time and
// content, to prove an entry was left exactly as it was.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestImportAtStart(t *testing.T) {
	h := newStopped(t)
	content := strings.Repeat("line of the plan\n", 1000)
	dir := writeEntry(t, h.root, "s1", validMeta, content)
	writeFile(t, filepath.Join(dir, spool.StateFile), `{"buffer_size":17000,"last_save":1767520805000,"line_count":1000}`)
	before := tree(t, dir)
	h.start(spool.Options{Clock: h.clk, Settle: settle})

	h.clk.Advance(settle - time.Millisecond)
	if calls, _, _ := h.counts(); calls != 0 {
		t.Fatal("imported before the entry was observed unchanged for Settle")
	}
	h.clk.Advance(time.Millisecond)
	if calls, imported, probs := h.counts(); calls != 1 || imported != 1 || probs != 0 {
		t.Fatalf("import calls %d, imported %d, problems %v; want one import", calls, imported, h.problems())
	}

	e := h.calls[0]
	if got, want := e.ID, "s1"; got != want {
		t.Errorf("ID = %q, want %q", got, want)
	}
	if e.Intent != "add a plan" || e.TargetFile != "/home/me/proj/plan.md" || e.Operation != "create" {
		t.Errorf("metadata = %q %q %q", e.Intent, e.TargetFile, e.Operation)
	}
	if want := time.Date(2026, 1, 4, 10, 0, 0, 0, time.UTC); !e.CreatedAt.Equal(want) {
		t.Errorf("CreatedAt = %v, want %v", e.CreatedAt, want)
	}
	if got, want := e.ContentSize, int64(len(content)); got != want {
		t.Errorf("ContentSize = %d, want %d", got, want)
	}
	if h.contents[0] != content {
		t.Errorf("content read through Open differs from content.txt")
	}
	if e.State == nil || e.State.LineCount != 1000 || e.State.BufferSize != 17000 ||
		!e.State.LastSave.Equal(time.UnixMilli(1767520805000)) {
		t.Errorf("State = %+v", e.State)
	}

	if exists(dir) {
		t.Error("the imported entry is still in the spool")
	}
	moved := filepath.Join(h.root, spool.ImportedDir, "s1")
	if after := tree(t, moved); !sameTree(before, after) {
		t.Errorf("the entry in .imported differs from what was imported:\nbefore %v\nafter  %v", before, after)
	}

	// Never imported twice.
	h.rescan()
	h.clk.Advance(10 * settle)
	if calls, _, _ := h.counts(); calls != 1 {
		t.Fatalf("import calls = %d after a rescan, want 1", calls)
	}
}

func TestImportWhileRunning(t *testing.T) {
	h := newHarness(t, spool.Options{})
	// A writer that creates the directory first and the files later.
	dir := filepath.Join(h.root, "s2")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, spool.MetadataFile), validMeta)
	writeFile(t, filepath.Join(dir, spool.ContentFile), "hello\n")
	h.until("the import", func() bool { _, imported, _ := h.counts(); return imported == 1 })
	if got := h.problems(); len(got) != 0 {
		t.Fatalf("problems %v for an entry that was only being written", got)
	}
	if !exists(filepath.Join(h.root, spool.ImportedDir, "s2")) || exists(dir) {
		t.Fatal("the entry was not moved to .imported")
	}
}

func TestImportWhileRunningRealClock(t *testing.T) {
	h := newStopped(t)
	done := make(chan spool.Entry, 10)
	s, err := spool.New(h.root, func(e spool.Entry) error { done <- e; return nil }, h.onProblem,
		spool.Options{Settle: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeEntry(t, h.root, "s3", validMeta, "x\n")
	select {
	case e := <-done:
		if e.ID != "s3" {
			t.Fatalf("imported %q, want s3", e.ID)
		}
	case <-time.After(deadline):
		t.Fatal("entry not imported")
	}
	// The move follows the import; wait for it.
	end := time.Now().Add(deadline)
	for exists(filepath.Join(h.root, "s3")) {
		if time.Now().After(end) {
			t.Fatal("entry not moved to .imported")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestMalformedReportedOnceAndLeftInPlace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, root string) string
		reason string
	}{
		{"BadJSON", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `{"target_file": "/x", "operation": "create"`, "c")
		}, spool.ReasonBadMetadataJSON},
		{"NotAnObject", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `["create"]`, "c")
		}, spool.ReasonBadMetadataJSON},
		{"WrongType", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `{"target_file": 5, "operation": "create"}`, "c")
		}, spool.ReasonBadMetadataJSON},
		{"UnknownOperation", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `{"target_file":"/x","operation":"patch"}`, "c")
		}, spool.ReasonUnknownOperation},
		{"MissingOperation", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `{"target_file":"/x"}`, "c")
		}, spool.ReasonMissingField},
		{"MissingTarget", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `{"operation":"create"}`, "c")
		}, spool.ReasonMissingField},
		{"RelativeTargetWithoutRoot", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", `{"target_file":"src/a.go","operation":"create"}`, "c")
		}, spool.ReasonBadPath},
		{"MissingContent", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", validMeta, "")
		}, spool.ReasonMissingContent},
		{"MissingMetadata", func(t *testing.T, root string) string {
			return writeEntry(t, root, "e", "", "c")
		}, spool.ReasonMissingMetadata},
		{"ContentIsADirectory", func(t *testing.T, root string) string {
			dir := writeEntry(t, root, "e", validMeta, "")
			if err := os.Mkdir(filepath.Join(dir, spool.ContentFile), 0o700); err != nil {
				t.Fatal(err)
			}
			return dir
		}, spool.ReasonNotRegularFile},
		{"ContentIsASymlink", func(t *testing.T, root string) string {
			dir := writeEntry(t, root, "e", validMeta, "")
			secret := filepath.Join(t.TempDir(), "secret")
			writeFile(t, secret, "not yours")
			if err := os.Symlink(secret, filepath.Join(dir, spool.ContentFile)); err != nil {
				t.Fatal(err)
			}
			return dir
		}, spool.ReasonNotRegularFile},
		{"StrayFile", func(t *testing.T, root string) string {
			p := filepath.Join(root, "notes.txt")
			writeFile(t, p, "not an entry")
			return p
		}, spool.ReasonNotADirectory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStopped(t)
			path := tc.make(t, h.root)
			before := tree(t, h.root)
			h.start(spool.Options{Clock: h.clk, Settle: settle})
			h.clk.Advance(settle)
			for range 3 {
				h.rescan()
				h.clk.Advance(settle)
			}
			got := h.problems()
			if len(got) != 1 || got[0].Reason != tc.reason || got[0].Dir != path {
				t.Fatalf("problems %v, want one %s for %s", got, tc.reason, path)
			}
			if got[0].Msg == "" {
				t.Error("the problem has no message")
			}
			t.Logf("%s: %s", got[0].Reason, got[0].Msg)
			if calls, _, _ := h.counts(); calls != 0 {
				t.Fatalf("import called %d times for a malformed entry", calls)
			}
			if after := tree(t, h.root); !sameTree(before, after) {
				t.Fatalf("the spool changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestIncompleteEntryIsNotReportedWhileBeingWritten(t *testing.T) {
	h := newHarness(t, spool.Options{})
	dir := filepath.Join(h.root, "slow")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	h.rescan() // observe the empty directory now
	h.clk.Advance(settle / 2)
	writeFile(t, filepath.Join(dir, spool.MetadataFile), validMeta)
	h.rescan()
	h.clk.Advance(settle / 2) // Settle since the directory appeared, not since the last change
	writeFile(t, filepath.Join(dir, spool.ContentFile), "late content\n")
	h.rescan()
	h.until("the import", func() bool { _, imported, _ := h.counts(); return imported == 1 })
	if got := h.problems(); len(got) != 0 {
		t.Fatalf("problems %v for an entry that was still being written", got)
	}
}

func TestMissingContentReportedAfterSettleThenImported(t *testing.T) {
	h := newStopped(t)
	dir := writeEntry(t, h.root, "late", validMeta, "")
	h.start(spool.Options{Clock: h.clk, Settle: settle})
	h.clk.Advance(settle - time.Millisecond)
	if got := h.problems(); len(got) != 0 {
		t.Fatalf("reported %v before the entry settled", got)
	}
	h.clk.Advance(time.Millisecond)
	if got := h.problems(); len(got) != 1 || got[0].Reason != spool.ReasonMissingContent {
		t.Fatalf("problems %v, want missing_content", got)
	}
	// The writer was only slow: the entry is still watched and imported
	// once its content shows up.
	writeFile(t, filepath.Join(dir, spool.ContentFile), "finally\n")
	h.until("the import", func() bool { _, imported, _ := h.counts(); return imported == 1 })
	if h.contents[0] != "finally\n" {
		t.Fatalf("imported %q", h.contents[0])
	}
}

func TestImportErrorIsRetried(t *testing.T) {
	t.Run("OnRescan", func(t *testing.T) {
		h := newStopped(t)
		h.fail = func(n int, _ spool.Entry) error {
			if n == 1 {
				return errors.New("store busy")
			}
			return nil
		}
		dir := writeEntry(t, h.root, "r", validMeta, "c")
		before := tree(t, dir)
		h.start(spool.Options{Clock: h.clk, Settle: settle})
		h.clk.Advance(settle)
		if calls, imported, _ := h.counts(); calls != 1 || imported != 0 {
			t.Fatalf("calls %d imported %d, want one failed call", calls, imported)
		}
		if after := tree(t, dir); !sameTree(before, after) {
			t.Fatal("a failed import changed the entry")
		}
		h.clk.Advance(10 * settle) // no retry without a reason
		if calls, _, _ := h.counts(); calls != 1 {
			t.Fatalf("calls %d, want no retry before a change or Rescan", calls)
		}
		h.rescan()
		if calls, imported, probs := h.counts(); calls != 2 || imported != 1 || probs != 0 {
			t.Fatalf("calls %d imported %d problems %d after Rescan, want the retry to import", calls, imported, probs)
		}
		if exists(dir) {
			t.Fatal("not moved after the successful retry")
		}
	})
	t.Run("OnChange", func(t *testing.T) {
		h := newStopped(t)
		h.fail = func(n int, _ spool.Entry) error {
			if n == 1 {
				return errors.New("store busy")
			}
			return nil
		}
		dir := writeEntry(t, h.root, "r", validMeta, "c")
		h.start(spool.Options{Clock: h.clk, Settle: settle})
		h.clk.Advance(settle)
		writeFile(t, filepath.Join(dir, spool.StateFile), `{"line_count":1}`)
		h.until("the retry", func() bool { _, imported, _ := h.counts(); return imported == 1 })
	})
	t.Run("AfterRetryInterval", func(t *testing.T) {
		h := newStopped(t)
		h.fail = func(n int, _ spool.Entry) error {
			if n == 1 {
				return errors.New("store busy")
			}
			return nil
		}
		writeEntry(t, h.root, "r", validMeta, "c")
		h.start(spool.Options{Clock: h.clk, Settle: settle, RetryInterval: time.Minute})
		h.clk.Advance(settle)
		h.clk.Advance(time.Minute - time.Millisecond)
		if calls, _, _ := h.counts(); calls != 1 {
			t.Fatalf("calls %d before the retry interval, want 1", calls)
		}
		h.clk.Advance(time.Millisecond)
		if calls, imported, _ := h.counts(); calls != 2 || imported != 1 {
			t.Fatalf("calls %d imported %d, want the retry to import", calls, imported)
		}
	})
}

func TestImportRefusedWithProblem(t *testing.T) {
	h := newStopped(t)
	h.fail = func(int, spool.Entry) error {
		return fmt.Errorf("checking the target: %w", &spool.Problem{Reason: "outside_allowed_roots", Msg: "target is outside every allowed root"})
	}
	dir := writeEntry(t, h.root, "far", validMeta, "c")
	before := tree(t, dir)
	h.start(spool.Options{Clock: h.clk, Settle: settle})
	h.clk.Advance(settle)
	h.rescan()
	h.rescan()
	got := h.problems()
	if len(got) != 1 || got[0].Reason != "outside_allowed_roots" || got[0].Dir != dir {
		t.Fatalf("problems %v, want one outside_allowed_roots for %s", got, dir)
	}
	if after := tree(t, dir); !sameTree(before, after) {
		t.Fatal("a refused entry was changed")
	}
}

func TestImportedNameTaken(t *testing.T) {
	h := newStopped(t)
	old := filepath.Join(h.root, spool.ImportedDir, "dup")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(old, "marker"), "earlier import")
	writeEntry(t, h.root, "dup", validMeta, "second")
	h.start(spool.Options{Clock: h.clk, Settle: settle})
	h.clk.Advance(settle)
	if b, err := os.ReadFile(filepath.Join(old, "marker")); err != nil || string(b) != "earlier import" {
		t.Fatalf("the earlier import was disturbed: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(h.root, spool.ImportedDir, "dup.1", spool.ContentFile)); err != nil || string(b) != "second" {
		t.Fatalf("second import not at dup.1: %q %v", b, err)
	}
}

func TestHiddenEntriesAreIgnoredUntilRenamedIntoPlace(t *testing.T) {
	h := newHarness(t, spool.Options{})
	staging := writeEntry(t, h.root, ".building-s9", validMeta, "whole\n")
	h.rescan()
	h.clk.Advance(10 * settle)
	if calls, _, probs := h.counts(); calls != 0 || probs != 0 {
		t.Fatalf("a hidden entry was looked at: calls %d problems %d", calls, probs)
	}
	if err := os.Rename(staging, filepath.Join(h.root, "s9")); err != nil {
		t.Fatal(err)
	}
	h.until("the import", func() bool { _, imported, _ := h.counts(); return imported == 1 })
}

func TestSpoolDirectoryRemoved(t *testing.T) {
	h := newHarness(t, spool.Options{})
	if err := os.RemoveAll(h.root); err != nil {
		t.Fatal(err)
	}
	// The first Rescan may find the directory gone before the event says
	// so; one of the next recreates it.
	end := time.Now().Add(deadline)
	for h.s.Rescan() != nil {
		if time.Now().After(end) {
			t.Fatal("Rescan never recreated the spool directory")
		}
		time.Sleep(2 * time.Millisecond)
	}
	writeEntry(t, h.root, "back", validMeta, "c")
	h.until("the import", func() bool { _, imported, _ := h.counts(); return imported == 1 })
}

func TestNewRefusesSharedDirectory(t *testing.T) {
	root := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := spool.New(root, func(spool.Entry) error { return nil }, nil, spool.Options{})
	if err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("New on a world-writable directory: %v, want a refusal that says what to do", err)
	}
}

func TestNewCreatesPrivateDirectory(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "spool")
	s, err := spool.New(root, func(spool.Entry) error { return nil }, nil, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("spool created with mode %v, want 0700", fi.Mode().Perm())
	}
}

func TestClose(t *testing.T) {
	h := newStopped(t)
	writeEntry(t, h.root, "c", validMeta, "c")
	h.start(spool.Options{Clock: h.clk, Settle: settle})
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(10 * settle)
	if calls, _, _ := h.counts(); calls != 0 {
		t.Fatal("imported after Close")
	}
	if err := h.s.Rescan(); !errors.Is(err, spool.ErrClosed) {
		t.Fatalf("Rescan after Close = %v, want ErrClosed", err)
	}
	if err := h.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMoveFailureNeverImportsTwice(t *testing.T) {
	h := newStopped(t)
	// A file where .imported should be: the move fails.
	blocker := filepath.Join(h.root, spool.ImportedDir)
	writeFile(t, blocker, "in the way")
	dir := writeEntry(t, h.root, "m", validMeta, "c")
	h.start(spool.Options{Clock: h.clk, Settle: settle})
	h.clk.Advance(settle)
	got := h.problems()
	if len(got) != 1 || got[0].Reason != spool.ReasonMoveFailed {
		t.Fatalf("problems %v, want move_failed", got)
	}
	if !exists(dir) {
		t.Fatal("entry gone after a failed move")
	}
	h.rescan()
	h.clk.Advance(settle)
	if calls, _, _ := h.counts(); calls != 1 {
		t.Fatalf("import calls = %d, want 1: an imported entry is never imported again", calls)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	h.rescan()
	if exists(dir) || !exists(filepath.Join(blocker, "m", spool.ContentFile)) {
		t.Fatal("the entry was not moved once the cause was fixed")
	}
	if calls, _, _ := h.counts(); calls != 1 {
		t.Fatalf("import calls = %d, want 1", calls)
	}
}
