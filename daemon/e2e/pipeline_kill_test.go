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

// A client streams a file in large chunks, several in flight (its next
// chunk queued while the one before syncs); the daemon is killed inside
// the content log's writes. After the restart the session resumes past
// every acknowledged chunk, and what it holds is exactly the chunks before
// next_seq.
func TestKilledWhilePipelinedStreamSyncs(t *testing.T) {
	const size = 96 << 10
	var data bytes.Buffer
	for i := 0; data.Len() < 24*size; i++ {
		fmt.Fprintf(&data, "line %07d of a file streamed in pipelined chunks\n", i)
	}
	content := data.Bytes()
	for _, point := range []string{"contentlog.sync=4", "contentlog.write=5", "contentlog.sync=8"} {
		t.Run(point, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + point}
			d.Restart()
			c := dial(t, d)
			ctx := testCtx(t)
			begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "big.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			if err != nil {
				t.Fatal(err)
			}
			var acked int64
			last, _, err := c.Stream(ctx, begun.SessionID, bytes.NewReader(content), client.StreamOptions{
				ChunkSize: size,
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
				t.Fatal(err)
			}
			if res.NextSeq < last.Seq+1 || res.Bytes < acked {
				t.Fatalf("after the kill: next_seq %d, %d bytes; seq %d (%d bytes) was acknowledged\n%s", res.NextSeq, res.Bytes, last.Seq, acked, d.Logs())
			}
			t.Logf("acknowledged seq %d, resumed at %d", last.Seq, res.NextSeq)
			held := int64(res.NextSeq-1) * size
			if res.Bytes != held {
				t.Fatalf("after the kill: next_seq %d but %d bytes; want %d", res.NextSeq, res.Bytes, held)
			}
			if _, _, err := c.Stream(ctx, begun.SessionID, bytes.NewReader(content[held:]), client.StreamOptions{ChunkSize: size, FirstSeq: res.NextSeq}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID, EndOfInput: true}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(d.Root, "big.txt")); !bytes.Equal(got, content) {
				t.Fatalf("file holds %d bytes, want %d", len(got), len(content))
			}
		})
	}
}
