package e2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func dial(t *testing.T, d *testdaemon.Daemon) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// sampleFile returns n lines of mixed ASCII and multi-byte text, so random
// chunking is tested against characters of every UTF-8 length.
func sampleFile(rng *rand.Rand, n int) string {
	words := []string{"alpha", "ünïcödé", "日本語", "emoji 🚀", "tab\there", `"quoted"`, `back\slash`, "DONE", "{", "}"}
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%05d", i)
		for range rng.IntN(12) {
			b.WriteByte(' ')
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// randomChunks splits s into chunks of 1 byte to 8 KiB, each ending on a
// character boundary as clients must cut them.
func randomChunks(rng *rand.Rand, s string) []string {
	var chunks []string
	for len(s) > 0 {
		n := min(1+rng.IntN(8192), len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		chunks = append(chunks, s[:n])
		s = s[n:]
	}
	return chunks
}

func appendAll(t *testing.T, c *client.Client, id string, chunks []string) protocol.AppendResult {
	t.Helper()
	var last protocol.AppendResult
	for i, ch := range chunks {
		ack, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: id, Seq: uint64(i + 1), Chunk: ch})
		if err != nil {
			t.Fatalf("append seq %d: %v", i+1, err)
		}
		last = ack
	}
	return last
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestLargeFileInRandomChunksArrivesByteIdentical(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	rng := rand.New(rand.NewPCG(1, 2))
	content := sampleFile(rng, 5000)
	target := filepath.Join(d.Root, "big.txt")

	begun, err := c.Begin(testCtx(t), protocol.BeginParams{Intent: "test", TargetFile: target, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	if begun.Stage != protocol.StageAwaitingContent || begun.EndMarker == "" || !strings.Contains(begun.Instructions, begun.EndMarker) {
		t.Fatalf("begin result %+v: want stage awaiting_content and instructions naming the end marker", begun)
	}
	ack := appendAll(t, c, begun.SessionID, randomChunks(rng, content+begun.EndMarker+"\n"))
	if !ack.EndMarkerSeen || ack.Lines != 5000 || ack.Bytes != int64(len(content)) {
		t.Fatalf("last ack %+v: want marker seen, 5000 lines, %d bytes", ack, len(content))
	}
	res, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(content)) {
		t.Fatalf("file differs from what was sent: %d bytes, want %d", len(got), len(content))
	}
	if res.SHA256 != sha(content) || res.Lines != 5000 || res.Bytes != int64(len(content)) || res.Mode != "0644" {
		t.Fatalf("summary %+v does not describe the content", res)
	}
	info, err := c.Get(testCtx(t), begun.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Stage != protocol.StageCompleted || info.Result == nil || info.Result.SHA256 != res.SHA256 {
		t.Fatalf("session after finalize: %+v", info)
	}
}

func TestMarkerSplitAtEveryBytePositionOverTheSocket(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	content := "first line\nsecond DONE line\n"
	for _, tail := range []string{"\n", ""} {
		for cut := 0; ; cut++ {
			target := filepath.Join(d.Root, fmt.Sprintf("split-%d-%d.txt", len(tail), cut))
			begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: target, Operation: protocol.OpCreate})
			if err != nil {
				t.Fatal(err)
			}
			stream := content + begun.EndMarker + tail
			if cut > len(stream) {
				break
			}
			ack := appendAll(t, c, begun.SessionID, []string{stream[:cut], stream[cut:]})
			if !ack.EndMarkerSeen {
				t.Fatalf("tail %q cut %d: end marker not seen", tail, cut)
			}
			if _, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
				t.Fatalf("tail %q cut %d: %v", tail, cut, err)
			}
			if got, _ := os.ReadFile(target); string(got) != content {
				t.Fatalf("tail %q cut %d: file %q, want %q", tail, cut, got, content)
			}
		}
	}
}

func TestLookalikesAndDONEAreWrittenUntouched(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	target := filepath.Join(d.Root, "notes.md")
	begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: target, Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	m := begun.EndMarker
	content := strings.Join([]string{
		"DONE",
		"done",
		"  DONE  ",
		"the marker " + m + " quoted inside a line",
		m + "x",
		strings.TrimSuffix(m, "__"),
		strings.Replace(m, "_", "-", 1),
		"__END_WRITE_000000000000__",
		"",
	}, "\n")
	ack := appendAll(t, c, begun.SessionID, []string{content, m + "\n", "Done! I wrote the file.\n"})
	if ack.TrailingBytes != int64(len("Done! I wrote the file.\n")) {
		t.Fatalf("trailing bytes %d, want the text after the marker counted", ack.TrailingBytes)
	}
	res, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != content {
		t.Fatalf("file:\n%s\nwant:\n%s", got, content)
	}
	if res.TrailingPreview != "Done! I wrote the file.\n" {
		t.Fatalf("trailing preview %q", res.TrailingPreview)
	}
}

func TestOperations(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	existing := filepath.Join(d.Root, "existing.sh")
	if err := os.WriteFile(existing, []byte("#!/bin/sh\necho old\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   protocol.Operation
		add  string
		want string
	}{
		{"Append", protocol.OpAppend, "echo new\n", "#!/bin/sh\necho old\necho new\n"},
		{"Overwrite", protocol.OpOverwrite, "#!/bin/sh\necho replaced\n", "#!/bin/sh\necho replaced\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "existing.sh", WorkspaceRoot: d.Root, Operation: tt.op})
			if err != nil {
				t.Fatal(err)
			}
			appendAll(t, c, begun.SessionID, []string{tt.add + begun.EndMarker})
			res, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(existing)
			if string(got) != tt.want {
				t.Fatalf("file %q, want %q", got, tt.want)
			}
			fi, _ := os.Stat(existing)
			if fi.Mode().Perm() != 0o755 || res.Mode != "0755" {
				t.Fatalf("mode %v (summary %s), want 0755 kept", fi.Mode().Perm(), res.Mode)
			}
			if res.FileSHA256 != sha(tt.want) || res.SHA256 != sha(tt.add) {
				t.Fatalf("summary hashes %+v", res)
			}
		})
	}
	t.Run("Abort", func(t *testing.T) {
		target := filepath.Join(d.Root, "never.txt")
		begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: target, Operation: protocol.OpCreate})
		if err != nil {
			t.Fatal(err)
		}
		appendAll(t, c, begun.SessionID, []string{"x\n" + begun.EndMarker})
		if _, err := c.Abort(testCtx(t), begun.SessionID); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("aborted session wrote its target: %v", err)
		}
		_, err = c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID})
		wantCode(t, err, protocol.CodeSessionState, protocol.ReasonSessionClosed)
	})
}

func TestAppendIsIdempotentBySeq(t *testing.T) {
	d := testdaemon.Start(t)
	c := dial(t, d)
	begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: filepath.Join(d.Root, "f"), Operation: protocol.OpCreate})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, c, begun.SessionID, []string{"one\n", "two\n"})
	dup, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: begun.SessionID, Seq: 1, Chunk: "one\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !dup.Duplicate || dup.Bytes != 8 {
		t.Fatalf("repeated seq 1: %+v, want duplicate with 8 bytes total", dup)
	}
	_, err = c.Append(testCtx(t), protocol.AppendParams{SessionID: begun.SessionID, Seq: 2, Chunk: "TWO\n"})
	wantCode(t, err, protocol.CodeSeqConflict, protocol.ReasonSeqConflict)
	if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: begun.SessionID, Seq: 3, Chunk: begun.EndMarker}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(d.Root, "f")); string(got) != "one\ntwo\n" {
		t.Fatalf("file %q: a repeated chunk was stored twice or a conflicting one replaced the first", got)
	}
}

func wantCode(t *testing.T, err error, code int64, reason string) {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a protocol error %d/%s", err, err, code, reason)
	}
	if pe.Code != code || pe.Data.Reason != reason {
		t.Fatalf("err = %v, want code %d reason %s", pe, code, reason)
	}
	if pe.Message == "" {
		t.Fatalf("error %d has no message", code)
	}
}
