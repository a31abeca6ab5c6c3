package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// streamText is n bytes of lines.
func streamText(n int, tag string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(tag)
		b.WriteString(" line ")
		b.WriteString(strings.Repeat("x", i%50))
		b.WriteString("\n")
	}
	return b.String()[:n-1] + "\n"
}

// chunked cuts s into pieces of size bytes.
func chunked(s string, size int) []string {
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}

// streamCase is a session streamed whole and finalized.
type streamCase struct {
	name  string
	begin protocol.BeginParams
	// existing, if set, is the target's content (mode 0755) before.
	existing string
	chunks   []string
	// endOfInput finalizes without the marker.
	endOfInput bool
	// named says whether the streamed file becomes the target.
	named bool
}

func (tc streamCase) run(t *testing.T, streamFrom int64) (*harness, protocol.FinalizeResult, error) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) {
		c.ValidateMaxBytes = 1 << 20
		c.StreamFileBytes = streamFrom
	})
	if tc.existing != "" {
		if err := os.WriteFile(h.abs(tc.begin.TargetFile), []byte(tc.existing), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := h.begin(tc.begin)
	chunks := append([]string(nil), tc.chunks...)
	if !tc.endOfInput {
		chunks[len(chunks)-1] += b.EndMarker + "\ntext after the marker\n"
	}
	h.append(b.SessionID, chunks...)
	res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: tc.endOfInput})
	return h, res, err
}

// A whole file streamed in large chunks (or announced large) is written
// into its new file as it arrives, and that file becomes the target: the
// file, its mode and the reply are exactly those of the same session
// written at its finalize, and nothing of the streamed file is left open.
// Content a check repairs is written at the finalize instead.
func TestStreamedFileBecomesTheTarget(t *testing.T) {
	big := streamText(3<<20+123, "big")
	small := streamText(700<<10, "small")
	for _, tc := range []streamCase{
		{name: "LargeUncheckedCreate", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			chunks: chunked(big, 1<<20), named: true},
		{name: "LargeCutLastLine", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			chunks: chunked(big[:len(big)-7], 1<<20), endOfInput: true, named: true},
		{name: "CheckedAsSent", begin: protocol.BeginParams{TargetFile: "small.txt", Operation: protocol.OpCreate},
			chunks: chunked(small, 300<<10), named: true},
		{name: "OverwriteKeepsMode", begin: protocol.BeginParams{TargetFile: "run.sh", Operation: protocol.OpOverwrite},
			existing: "#!/bin/sh\necho old\n", chunks: chunked(big, 1<<20), named: true},
		{name: "AnnouncedLargeSmallChunks", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate, ExpectedBytes: int64(len(big))},
			chunks: chunked(big, 16<<10), named: true},
		{name: "LargeChunksAfterSmall", begin: protocol.BeginParams{TargetFile: "small.txt", Operation: protocol.OpCreate},
			chunks: append([]string{small[:16<<10]}, chunked(small[16<<10:], 300<<10)...), named: true},
		{name: "LargeChunksAfterSmallNoSum", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			chunks: append([]string{big[:16<<10]}, chunked(big[16<<10:], 1<<20)...), named: false},
		// A first chunk under 256 KiB keeps no running sum (hashing each
		// 64 KiB append cost a pipe's stream more than this case gains),
		// so large chunks after it are not streamed into the file: its
		// finalize reads the log. orionctl sends a file's first chunk
		// whole-sized, a pipe's all at 64 KiB.
		{name: "LargeChunksAfterA64KiBOne", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			chunks: append([]string{big[:64<<10]}, chunked(big[64<<10:], 1<<20)...), named: false},
		{name: "SmallChunksPastThreshold", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			chunks: chunked(big, 64<<10), named: false},
		{name: "Repaired", begin: protocol.BeginParams{TargetFile: "small.txt", Operation: protocol.OpCreate},
			chunks: chunked(small[:len(small)-1]+"\xff\xfe\n", 300<<10), named: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, want, werr := tc.run(t, -1)
			h, got, err := tc.run(t, 2<<20)
			if (err == nil) != (werr == nil) {
				t.Fatalf("finalize: %v; written at the finalize: %v", err, werr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Bytes != want.Bytes || got.Lines != want.Lines || got.SHA256 != want.SHA256 ||
				got.FileBytes != want.FileBytes || got.FileSHA256 != want.FileSHA256 || got.Mode != want.Mode {
				t.Fatalf("reply %+v\nwritten at the finalize: %+v", got, want)
			}
			name := tc.begin.TargetFile
			if h.read(name) != ref.read(name) {
				t.Fatalf("%s differs from the file written at the finalize", name)
			}
			fi, err := os.Stat(h.abs(name))
			if err != nil {
				t.Fatal(err)
			}
			if wantMode := os.FileMode(0o644); tc.existing != "" && fi.Mode().Perm() != 0o755 || tc.existing == "" && fi.Mode().Perm() != wantMode {
				t.Errorf("%s has mode %v", name, fi.Mode())
			}
			open, named := session.Streamed(h.mgr)
			if open != 0 {
				t.Errorf("%d streamed files still open after the finalize", open)
			}
			if wantNamed := map[bool]int64{true: 1, false: 0}[tc.named]; named != wantNamed {
				t.Errorf("%d streamed files named, want %d", named, wantNamed)
			}
			assertNoTemp(t, h.root)
		})
	}
}

// assertNoTemp fails if a temp file is left in dir.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".orion-tmp-") {
			t.Errorf("temp file %s left in %s", e.Name(), dir)
		}
	}
}

// A chunk that fails (its sync fails) takes the session back to the last
// durable chunk, and the client's retry may send other bytes for the
// failed seq: the streamed file, which took the failed chunk, is dropped,
// and the file written holds what was acknowledged.
func TestStreamedFileDroppedOnRollback(t *testing.T) {
	h, gate := gatedHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate})
	chunks := chunked(streamText(1<<20, "first"), 256<<10)
	h.append(b.SessionID, chunks[0], chunks[1])
	if open, _ := session.Streamed(h.mgr); open != 1 {
		t.Fatalf("%d streamed files open, want the session's", open)
	}
	done3 := heldAppend(h, gate, protocol.AppendParams{SessionID: b.SessionID, Seq: 3, Chunk: chunks[2]})
	done4 := queuedBehind(t, h, protocol.AppendParams{SessionID: b.SessionID, Seq: 4, Chunk: chunks[3]}, done3)
	gate.release <- syscall.EIO
	for _, done := range []chan appendOutcome{done3, done4} {
		if o := <-done; o.err == nil {
			t.Fatal("a chunk acknowledged though its sync failed")
		}
	}
	retry := strings.ToUpper(chunks[2]) + "a shorter retry\n"
	h.append(b.SessionID, retry)
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.read("big.txt"), chunks[0]+chunks[1]+retry; got != want {
		t.Fatalf("file of %d bytes, want the %d acknowledged", len(got), len(want))
	}
	if open, named := session.Streamed(h.mgr); open != 0 || named != 0 {
		t.Fatalf("after a rollback: %d streamed files open, %d named; want none", open, named)
	}
	assertNoTemp(t, h.root)
}

// A session that ends without being written closes its streamed file, and
// the daemon holds at most MaxStreamedFiles at once: a session past that is
// written at its finalize, as any other.
func TestStreamedFilesBounded(t *testing.T) {
	h := newHarness(t)
	chunk := streamText(256<<10, "c")
	if err := os.Mkdir(h.abs("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range session.MaxStreamedFiles + 2 {
		b := h.begin(protocol.BeginParams{TargetFile: filepath.Join("d", strings.Repeat("f", i+1)), Operation: protocol.OpCreate})
		ids = append(ids, b.SessionID)
	}
	for _, id := range ids {
		h.append(id, chunk)
	}
	if open, _ := session.Streamed(h.mgr); open != session.MaxStreamedFiles {
		t.Fatalf("%d streamed files open, want the bound, %d", open, session.MaxStreamedFiles)
	}
	if _, err := h.mgr.Abort(ids[0]); err != nil {
		t.Fatal(err)
	}
	if open, _ := session.Streamed(h.mgr); open != session.MaxStreamedFiles-1 {
		t.Fatalf("after an abort %d streamed files open, want %d", open, session.MaxStreamedFiles-1)
	}
	for _, id := range ids[1:] {
		if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id, EndOfInput: true}); err != nil {
			t.Fatal(err)
		}
	}
	open, named := session.Streamed(h.mgr)
	if open != 0 || named != int64(session.MaxStreamedFiles-1) {
		t.Fatalf("after the finalizes %d streamed files open, %d named; want 0 and %d", open, named, session.MaxStreamedFiles-1)
	}
	for i, id := range ids[1:] {
		if got := h.read(filepath.Join("d", strings.Repeat("f", i+2))); got != chunk {
			t.Fatalf("session %s wrote %d bytes, want %d", id, len(got), len(chunk))
		}
	}
	assertNoTemp(t, h.abs("d"))
}

// The target's directory replaced while the file streams (moved away, a new
// one made at its path): the file lands at its path, in the new directory,
// and nothing in the old one.
func TestStreamedFileFollowsItsPath(t *testing.T) {
	h := newHarness(t)
	if err := os.Mkdir(h.abs("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := h.begin(protocol.BeginParams{TargetFile: "d/big.txt", Operation: protocol.OpCreate})
	content := streamText(1<<20, "moved")
	h.append(b.SessionID, chunked(content, 256<<10)...)
	if err := os.Rename(h.abs("d"), h.abs("old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(h.abs("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.read("d/big.txt"); got != content {
		t.Fatalf("d/big.txt holds %d bytes, want %d", len(got), len(content))
	}
	if entries, _ := os.ReadDir(h.abs("old")); len(entries) != 0 {
		t.Fatalf("the old directory holds %v", entries)
	}
	if _, named := session.Streamed(h.mgr); named != 1 {
		t.Errorf("%d streamed files named, want 1", named)
	}
}

// A session that ends truncated (its auto-finalize came without the
// marker) or that a stopping daemon leaves open closes its streamed file.
func TestStreamedFileDroppedWhenSessionEnds(t *testing.T) {
	h := newHarness(t)
	chunk := streamText(256<<10, "c")
	cut := h.begin(protocol.BeginParams{TargetFile: "cut.txt", Operation: protocol.OpCreate})
	h.append(cut.SessionID, chunk)
	if open, _ := session.Streamed(h.mgr); open != 1 {
		t.Fatalf("%d streamed files open, want 1", open)
	}
	h.clock.Advance(session.DefaultAutoFinalize + time.Second)
	if info, _ := h.mgr.Get(cut.SessionID); info.Stage != protocol.StageTruncated {
		t.Fatalf("stage %s after the auto-finalize, want truncated", info.Stage)
	}
	if open, _ := session.Streamed(h.mgr); open != 0 {
		t.Fatalf("%d streamed files open after the session was truncated", open)
	}
	left := h.begin(protocol.BeginParams{TargetFile: "left.txt", Operation: protocol.OpCreate})
	h.append(left.SessionID, chunk)
	m := h.mgr
	h.close()
	if open, _ := session.Streamed(m); open != 0 {
		t.Fatalf("%d streamed files open after the engine closed", open)
	}
	assertNoTemp(t, h.root)
}

// The target's directory gone by the finalize: the streamed file is
// dropped, and the finalize does what it does without one.
func TestStreamedFileDirectoryGone(t *testing.T) {
	run := func(t *testing.T, streamFrom int64) (*harness, error) {
		h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.StreamFileBytes = streamFrom })
		if err := os.Mkdir(h.abs("d"), 0o755); err != nil {
			t.Fatal(err)
		}
		b := h.begin(protocol.BeginParams{TargetFile: "d/big.txt", Operation: protocol.OpCreate})
		h.append(b.SessionID, chunked(streamText(1<<20, "gone"), 256<<10)...)
		if err := os.Remove(h.abs("d")); err != nil {
			t.Fatal(err)
		}
		_, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true})
		return h, err
	}
	ref, werr := run(t, -1)
	h, err := run(t, 0)
	if (err == nil) != (werr == nil) {
		t.Fatalf("finalize: %v; written at the finalize: %v", err, werr)
	}
	if err == nil && h.read("d/big.txt") != ref.read("d/big.txt") {
		t.Fatal("d/big.txt differs from the file written at the finalize")
	}
	if open, named := session.Streamed(h.mgr); open != 0 || named != 0 {
		t.Fatalf("%d streamed files open, %d named; want none", open, named)
	}
}

// Where the file system cannot make a file without a name (no O_TMPFILE),
// nothing is streamed and the finalize writes the file from the journal as
// it always did: the same file and reply, and no temp file left behind.
func TestStreamedFileWithoutHiddenFiles(t *testing.T) {
	big := streamText(3<<20+123, "big")
	small := streamText(700<<10, "small")
	for _, tc := range []streamCase{
		{name: "LargeUncheckedCreate", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate},
			chunks: chunked(big, 1<<20)},
		{name: "CheckedAsSent", begin: protocol.BeginParams{TargetFile: "small.txt", Operation: protocol.OpCreate},
			chunks: chunked(small, 300<<10)},
		{name: "OverwriteKeepsMode", begin: protocol.BeginParams{TargetFile: "run.sh", Operation: protocol.OpOverwrite},
			existing: "#!/bin/sh\necho old\n", chunks: chunked(big, 1<<20)},
		{name: "AnnouncedLargeSmallChunks", begin: protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate, ExpectedBytes: int64(len(big))},
			chunks: chunked(big, 16<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, want, err := tc.run(t, -1)
			if err != nil {
				t.Fatal(err)
			}
			restore := session.SetNoHiddenFiles()
			defer restore()
			h, got, err := tc.run(t, 2<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bytes != want.Bytes || got.Lines != want.Lines || got.SHA256 != want.SHA256 ||
				got.FileBytes != want.FileBytes || got.FileSHA256 != want.FileSHA256 || got.Mode != want.Mode {
				t.Fatalf("reply %+v\nwritten at the finalize, nothing streamed: %+v", got, want)
			}
			name := tc.begin.TargetFile
			if content := h.read(name); content != strings.Join(tc.chunks, "") {
				t.Fatalf("%s holds %d bytes, want the %d sent", name, len(content), len(strings.Join(tc.chunks, "")))
			}
			fi, err := os.Stat(h.abs(name))
			if err != nil {
				t.Fatal(err)
			}
			if wantPerm := map[bool]os.FileMode{true: 0o755, false: 0o644}[tc.existing != ""]; fi.Mode().Perm() != wantPerm {
				t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), wantPerm)
			}
			if open, named := session.Streamed(h.mgr); open != 0 || named != 0 {
				t.Errorf("%d streamed files open, %d named, where none can be made", open, named)
			}
			assertNoTemp(t, h.root)
		})
	}
}
