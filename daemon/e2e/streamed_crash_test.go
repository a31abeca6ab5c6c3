package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestStreamedFileKilled: a whole file sent in large chunks is also written,
// as they arrive, into a file without a name next to its target, which its
// finalize names instead of writing the file again. Killed at each step of
// that (a chunk written into it, the file synced at the finalize, the file
// linked or given its temp name, and after the rename), the target holds
// its old content or the new one, never anything else, and once the daemon
// is back and the client has resumed and finalized, the target holds the
// new content and no temp file is left.
func TestStreamedFileKilled(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 3<<19; i++ {
		fmt.Fprintf(&b, "line %07d of a file streamed whole\n", i)
	}
	content := b.String()
	chunks := chunksOf(content, 512<<10)
	for _, tc := range []struct {
		name, point string
		op          protocol.Operation
		args        []string
		// inFinalize: the kill comes at the finalize, not at an append;
		// replied: the finalize replies first.
		inFinalize, replied bool
	}{
		{name: "WhileStreaming", point: "session.streamed-chunk=2", op: protocol.OpOverwrite},
		{name: "SyncedUnnamed", point: "atomicfile.streamed-synced=1", op: protocol.OpOverwrite, inFinalize: true},
		{name: "SyncedUnnamedCreate", point: "atomicfile.streamed-synced=1", op: protocol.OpCreate, inFinalize: true},
		{name: "NamedBeforeRename", point: "atomicfile.before-rename=1", op: protocol.OpOverwrite, inFinalize: true},
		{name: "LinkedDirectoryNotSynced", point: "atomicfile.before-rename=1", op: protocol.OpCreate, inFinalize: true},
		{name: "AfterRename", point: "store.commit-deferred=1", op: protocol.OpOverwrite, args: []string{"--trace=false"}, inFinalize: true, replied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Args = append(d.Args, tc.args...)
			d.Restart()
			c := dial(t, d)
			dir := filepath.Join(d.Root, "w")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "big.txt")
			old := ""
			if tc.op == protocol.OpOverwrite {
				old = originalContent
				if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			begun, err := c.Begin(testCtx(t), protocol.BeginParams{Intent: "killed at " + tc.point, TargetFile: target, Operation: tc.op})
			if err != nil {
				t.Fatal(err)
			}
			var appendErr error
			for i, chunk := range chunks {
				if _, appendErr = c.Append(testCtx(t), protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: chunk}); appendErr != nil {
					break
				}
			}
			if (appendErr != nil) == tc.inFinalize {
				t.Fatalf("appends: %v; want the kill in the finalize: %v", appendErr, tc.inFinalize)
			}
			if appendErr == nil {
				_, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true})
				if (err == nil) != tc.replied {
					t.Fatalf("finalize: %v", err)
				}
			}
			d.Wait()
			holds := func(when string) string {
				t.Helper()
				got, err := os.ReadFile(target)
				switch {
				case os.IsNotExist(err) && old == "":
					return ""
				case err != nil:
					t.Fatalf("%s: %v", when, err)
				case string(got) != old && string(got) != content:
					t.Fatalf("%s the target holds %d bytes: neither the old content nor the new", when, len(got))
				}
				return string(got)
			}
			holds("after the kill")
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			// The client, which lost its daemon, resumes: sends what was
			// not acknowledged and finalizes.
			res, err := c.Resume(testCtx(t), begun.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stage != protocol.StageCompleted {
				for seq := res.NextSeq; seq <= uint64(len(chunks)); seq++ {
					if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: begun.SessionID, Seq: seq, Chunk: chunks[seq-1]}); err != nil {
						t.Fatalf("resuming at seq %d: %v", seq, err)
					}
				}
			}
			fin, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true})
			if err != nil {
				t.Fatalf("finalize after the restart: %v\n%s", err, d.Logs())
			}
			sum := sha256.Sum256([]byte(content))
			if got := holds("after the restart"); got != content || fin.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("after the restart the target holds %d bytes, sha256 %s; want %d bytes", len(got), fin.SHA256, len(content))
			}
			assertNoTempFiles(t, dir)
		})
	}
}

// chunksOf cuts s into pieces of size bytes.
func chunksOf(s string, size int) []string {
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}
