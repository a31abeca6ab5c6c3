package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// A client that keeps several chunks of one session in flight (as orionctl
// write does) has them journaled in shared syncs; the daemon killed inside
// one of them loses nothing acknowledged, and resume's next_seq and bytes
// say where to go on from: the rest sent from there, the file holds the
// content once.
func TestKilledWhilePipelining(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 12*64<<10; i++ {
		fmt.Fprintf(&b, "line %d of a file streamed in pipelined chunks\n", i)
	}
	content := b.String()
	for _, point := range []string{"contentlog.write=3", "contentlog.sync=2", "contentlog.sync=5"} {
		t.Run(point, func(t *testing.T) {
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
			_, _, err = c.Stream(ctx, begun.SessionID, strings.NewReader(content), client.StreamOptions{
				ChunkSize: 64 << 10,
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
			if res.Bytes < acked || res.Bytes > int64(len(content)) || !strings.HasPrefix(content, content[:res.Bytes]) {
				t.Fatalf("resume says %d bytes, %d were acknowledged\n%s", res.Bytes, acked, d.Logs())
			}
			// Chunks are 64 KiB but the last (the content is ASCII, cut
			// anywhere): the seq to go on from follows from the bytes.
			if want := uint64((res.Bytes+64<<10-1)/(64<<10)) + 1; res.NextSeq != want {
				t.Fatalf("resume says next_seq %d for %d bytes, want %d", res.NextSeq, res.Bytes, want)
			}
			if _, _, err := c.Stream(ctx, begun.SessionID, strings.NewReader(content[res.Bytes:]+begun.EndMarker+"\n"),
				client.StreamOptions{ChunkSize: 64 << 10, FirstSeq: res.NextSeq}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(d.Root, "piped.txt")); !bytes.Equal(got, []byte(content)) {
				t.Fatalf("file holds %d bytes, want %d", len(got), len(content))
			}
		})
	}
}
