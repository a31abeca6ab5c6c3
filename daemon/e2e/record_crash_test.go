package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// Most appends journal their chunk without the session record, which goes
// with a chunk only now and then (and at every stage change). oriond
// killed after appends that carried no record, before the next record
// write: every acknowledged chunk is there after the restart, with the
// session's counts (last seq, bytes, lines) rebuilt from the chunks, both
// when their index entries were still waiting (read back from the log)
// and when a commit had indexed them.
func TestKilledBetweenAppendAndRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		// indexed commits the waiting index entries before the kill: a
		// session begun meanwhile commits them first.
		indexed bool
	}{
		{"IndexWaiting", false},
		{"Indexed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			c := dial(t, d)
			ctx := testCtx(t)
			begun, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "rec.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			if err != nil {
				t.Fatal(err)
			}
			// The first append records the stage change; the next ones,
			// fewer than a record's period, carry none.
			var chunks []string
			for i := range 10 {
				chunks = append(chunks, strings.Repeat(fmt.Sprintf("line %d\n", i), i+1)+"partial ")
			}
			for i, ch := range chunks {
				if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(i + 1), Chunk: ch}); err != nil {
					t.Fatal(err)
				}
			}
			want := strings.Join(chunks, "")
			if tc.indexed {
				if _, err := c.Begin(ctx, protocol.BeginParams{TargetFile: "other.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate}); err != nil {
					t.Fatal(err)
				}
			}
			d.Kill()
			d.Restart()
			c = dial(t, d)
			res, err := c.Resume(ctx, begun.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			wantLines := int64(strings.Count(want, "\n") + 1) // the last line is unterminated
			if res.LastSeq != uint64(len(chunks)) || res.NextSeq != uint64(len(chunks)+1) ||
				res.Bytes != int64(len(want)) || res.Lines != wantLines || res.Stage != protocol.StageStreaming {
				t.Fatalf("resume after the kill: last_seq %d next_seq %d bytes %d lines %d stage %s; want %d, %d, %d, %d, streaming\n%s",
					res.LastSeq, res.NextSeq, res.Bytes, res.Lines, res.Stage, len(chunks), len(chunks)+1, len(want), wantLines, d.Logs())
			}
			// A retried chunk is known as the one acknowledged.
			dup, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(len(chunks)), Chunk: chunks[len(chunks)-1]})
			if err != nil || !dup.Duplicate {
				t.Fatalf("retry of the last acknowledged chunk: %+v, %v", dup, err)
			}
			if _, err := c.Append(ctx, protocol.AppendParams{SessionID: begun.SessionID, Seq: uint64(len(chunks) + 1), Chunk: "\n" + begun.EndMarker + "\n"}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Finalize(ctx, protocol.FinalizeParams{SessionID: begun.SessionID}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(d.Root, "rec.txt")); string(got) != want+"\n" {
				t.Fatalf("file holds %q, want %q", got, want+"\n")
			}
		})
	}
}
