package session_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// bigTarget makes a sparse file of size bytes at name under h's root: a
// CRLF first line, a hole, and a CRLF last line.
func bigTarget(t *testing.T, h *harness, name string, size int64) string {
	t.Helper()
	path := filepath.Join(h.root, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("first line\r\n"); err != nil {
		t.Fatal(err)
	}
	last := "last line\r\n"
	if _, err := f.WriteAt([]byte("\r\n"+last), size-int64(len(last))-2); err != nil {
		t.Fatal(err)
	}
	return path
}

// A small write over a file larger than the validation limit holds a
// sample of that file, not the file: the bytes allocated stay far below
// its size, and the conventions the check follows (here CRLF line
// endings) are still the file's.
func TestWriteOverLargeFileReadsASample(t *testing.T) {
	const size = 64 << 20
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.ValidateMaxBytes = 1 << 20 })
	target := bigTarget(t, h, "big.txt", size)
	noBackup := false

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{
		TargetFile: "big.txt", Operation: protocol.OpOverwrite, BackupRequired: &noBackup,
	}, Content: "new\nfile\n"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("replacing a %d-byte file allocated %d bytes", size, got)
	if got > size/8 {
		t.Errorf("replacing a %d-byte file allocated %d bytes, want under %d", size, got, size/8)
	}
	if got, _ := os.ReadFile(target); string(got) != "new\r\nfile\r\n" {
		t.Errorf("big.txt = %q, want the new content with the file's CRLF line endings", got)
	}
	if res.Validation == nil || res.Validation.Skipped != "" {
		t.Errorf("validation %+v, want the new content checked", res.Validation)
	}
}

// Emptying a file too large to read still warns, as emptying any file
// does.
func TestEmptyingLargeFileWarns(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.ValidateMaxBytes = 1 << 20 })
	bigTarget(t, h, "big.txt", 4<<20)
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{
		TargetFile: "big.txt", Operation: protocol.OpOverwrite,
	}, Content: ""})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range res.Validation.Findings {
		found = found || f.Code == "empty_content"
	}
	if !found {
		t.Errorf("findings %+v, want empty_content", res.Validation.Findings)
	}
}

// Text appended to a file over the validation limit is checked with the
// file, which is not read: it is written unchecked, after the file.
func TestAppendToLargeFileUnchecked(t *testing.T) {
	const size = 4 << 20
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.ValidateMaxBytes = 1 << 20 })
	target := bigTarget(t, h, "big.txt", size)
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{
		TargetFile: "big.txt", Operation: protocol.OpAppend,
	}, Content: "more\r\n"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Validation == nil || res.Validation.Skipped == "" {
		t.Errorf("validation %+v, want skipped", res.Validation)
	}
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size+len("more\r\n") || string(got[size:]) != "more\r\n" {
		t.Errorf("big.txt: %d bytes ending %q", len(got), got[len(got)-20:])
	}
}

// A file over the limit with no line end at all is sampled at character
// boundaries, and its lack of a final newline is still followed.
func TestWriteOverLargeFileWithoutLineEnds(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.ValidateMaxBytes = 1 << 20 })
	target := filepath.Join(h.root, "one-line.txt")
	if err := os.WriteFile(target, []byte(strings.Repeat("é", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{
		TargetFile: "one-line.txt", Operation: protocol.OpOverwrite,
	}, Content: "short\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "short" {
		t.Errorf("one-line.txt = %q, want %q: the file it replaces ends without a newline", got, "short")
	}
	if len(res.Repairs) != 1 || res.Repairs[0].Kind != "final_newline_removed" {
		t.Errorf("repairs %+v, want the final newline removed", res.Repairs)
	}
}
