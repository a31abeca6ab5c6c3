package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// An append is acknowledged once its record is synced to the content log;
// its index entry rides a later commit. Kills at each step of that path:
// whatever was acknowledged is there after the restart, and what was not
// is resent from next_seq and lands once.
func TestKilledInsideContentLogWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		point string
		// acked is how many of the three appends the client hears of
		// before the kill.
		acked int
	}{
		// Before the third append's pwrite, and between its pwrite and
		// its fdatasync: never acknowledged. (Begin writes nothing: the
		// session's record goes with its first chunk.)
		{"BeforeWrite", "contentlog.write=3", 2},
		{"BeforeSync", "contentlog.sync=3", 2},
		// All three acknowledged; the kill comes as the third one's
		// index entry is taken into a bbolt commit, which never happens:
		// the next start indexes it from the log. The point counts
		// entries, not commits: a commit may take the first entries while
		// the appends are still coming (the deferred entries' timer runs
		// from the first append's), and it must not be the one that dies.
		{"BeforeIndexCommit", "store.index-entry=3", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			// Without the trace, whose batches commit every 100 ms, no
			// commit takes the third entry between its sync and its
			// reply: only the deferred entries' timer, a second later.
			d.Args = append(d.Args, "--trace=false")
			d.Restart()
			c := dial(t, d)
			ctx := testCtx(t)
			begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "log.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			if err != nil {
				t.Fatal(err)
			}
			chunks := []string{"one\n", strings.Repeat("two\n", 3000), "three\n"}
			acked := 0
			for i, ch := range chunks {
				if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: ch}); err != nil {
					break
				}
				acked++
			}
			if acked != tc.acked {
				t.Fatalf("%d appends acknowledged before the kill, want %d\n%s", acked, tc.acked, d.Logs())
			}
			d.Wait() // the index commit's kill comes on its timer
			d.Env = nil
			d.Restart()
			resumeAndFinish(t, ctx, d, begun, chunks, acked, "log.txt")
		})
	}
}

// resumeAndFinish resumes the session begun on the restarted d, of which
// acked appends of chunks were acknowledged before a kill: it must resume
// past them; the rest and the end marker are sent, the session finalized,
// and name must hold every chunk.
func resumeAndFinish(t *testing.T, ctx context.Context, d *testdaemon.Daemon, begun protocol.BeginResult, chunks []string, acked int, name string) {
	t.Helper()
	c := dial(t, d)
	res, err := c.Resume(ctx, begun.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if res.NextSeq < uint64(acked+1) {
		t.Fatalf("resume after the kill: next_seq %d, but %d appends were acknowledged\n%s", res.NextSeq, acked, d.Logs())
	}
	for i := int(res.NextSeq) - 1; i < len(chunks); i++ {
		if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: chunks[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(len(chunks) + 1), Chunk: begun.EndMarker + "\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(d.Root, name)); string(got) != strings.Join(chunks, "") {
		t.Fatalf("file holds %d bytes, want %d", len(got), len(strings.Join(chunks, "")))
	}
}
