package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/contentlog"
	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// Once a MiB is in the content log's first segment, the next one is
// prepared in the background (written with zeros, synced, renamed into
// place). Kills while it is written and just before it is renamed: the
// session streaming meanwhile resumes at its last acknowledged chunk, and
// its file is written whole.
func TestKilledWhilePreparingSegment(t *testing.T) {
	for _, point := range []string{"contentlog.prepare=1", "contentlog.spare=1"} {
		t.Run(point, func(t *testing.T) {
			d := testdaemon.Start(t)
			if !contentlog.Prepares(d.StateDir) {
				t.Skip("the content log prepares no segments on this system or file system")
			}
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + point}
			d.Restart()
			c := dial(t, d)
			ctx := testCtx(t)
			begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "big.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			if err != nil {
				t.Fatal(err)
			}
			var chunks []string
			for i := range 12 {
				chunks = append(chunks, strings.Repeat(fmt.Sprintf("chunk %02d\n", i), 256<<10/9))
			}
			acked := 0
			for i, ch := range chunks {
				if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: ch}); err != nil {
					break
				}
				acked++
			}
			// The preparation runs in the background: the kill may come
			// after the last reply.
			if err := d.Wait(); err == nil {
				t.Fatalf("oriond exited by itself, not at %s\n%s", point, d.Logs())
			}
			d.Env = nil
			d.Restart()
			resumeAndFinish(t, ctx, d, begun, chunks, acked, "big.txt")
		})
	}
}
