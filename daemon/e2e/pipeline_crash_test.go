package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A client that keeps several chunks of one session in flight (as orionctl
// write does) has them journaled in shared syncs, its next chunk queued
// while the one before syncs; the daemon killed inside the content log's
// writes and syncs loses nothing acknowledged. After the restart the
// session resumes past every acknowledged chunk, what it holds is exactly
// the chunks before next_seq, and the rest sent from there gives the file
// once.
func TestKilledWhilePipelining(t *testing.T) {
	for _, tc := range []struct {
		size   int
		points []string
	}{
		{64 << 10, []string{"contentlog.write=3", "contentlog.sync=2", "contentlog.sync=5"}},
		{96 << 10, []string{"contentlog.sync=4", "contentlog.write=5", "contentlog.sync=8"}},
	} {
		// Chunks enough that each kill point lands inside the stream
		// however many chunks share a sync: a client keeps up to 8 in
		// flight, and a quicker daemon batches more of them per sync.
		var data bytes.Buffer
		for i := 0; data.Len() < 64*tc.size; i++ {
			fmt.Fprintf(&data, "line %07d of a file streamed in pipelined chunks\n", i)
		}
		content := data.Bytes()
		for _, point := range tc.points {
			t.Run(fmt.Sprintf("%dKiB/%s", tc.size>>10, point), func(t *testing.T) {
				d := testdaemon.Start(t)
				d.Stop()
				d.Env = []string{failpoint.EnvVar + "=" + point}
				d.Restart()
				c := dial(t, d)
				ctx := testCtx(t)
				begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "piped.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
				if err != nil {
					t.Fatal(err)
				}
				var acked int64
				last, _, err := c.Stream(ctx, begun.SessionID, bytes.NewReader(content), client.StreamOptions{
					ChunkSize: tc.size,
					Progress:  func(sent int64) { acked = sent },
				})
				if err == nil {
					t.Fatalf("the stream ended without the kill at %s\n%s", point, d.Logs())
				}
				d.Wait()
				d.Env = nil
				d.Restart()
				c = dial(t, d)
				res, err := c.Resume(ctx, begun.SessionID)
				if err != nil {
					t.Fatalf("resume after the kill (%d bytes acknowledged): %v\n%s", acked, err, d.Logs())
				}
				if res.NextSeq < last.Seq+1 || res.Bytes < acked {
					t.Fatalf("after the kill: next_seq %d, %d bytes; seq %d (%d bytes) was acknowledged\n%s", res.NextSeq, res.Bytes, last.Seq, acked, d.Logs())
				}
				held := int64(res.NextSeq-1) * int64(tc.size)
				if res.Bytes != held {
					t.Fatalf("after the kill: next_seq %d but %d bytes; want %d", res.NextSeq, res.Bytes, held)
				}
				if _, _, err := c.Stream(ctx, begun.SessionID, bytes.NewReader(content[held:]), client.StreamOptions{ChunkSize: tc.size, FirstSeq: res.NextSeq}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true}); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(filepath.Join(d.Root, "piped.txt")); !bytes.Equal(got, content) {
					t.Fatalf("file holds %d bytes, want %d", len(got), len(content))
				}
			})
		}
	}
}
