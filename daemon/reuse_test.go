package daemon_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestAppendsOfSessionsSharingAConnection: appends of several sessions,
// interleaved on one connection, of chunks of many sizes, each reach their
// own session whole, and each reply tells its own session's count. What
// the daemon reuses from one request to the next (frame buffers the chunks
// are unquoted in, the session id the connection named last, the reply's
// buffer, the memory of a request served on the read loop, its params and
// result) carries nothing of one request into another's. In turn, the
// sessions' appends go one at a time, each served on the connection's
// read loop; at once, they overlap, served on goroutines of their own and
// on the read loop by turns. With chunks of up to 96 KiB, those from
// 64 KiB on are served on goroutines of their own even alone (pipelined),
// their frames released while the read loop reads the next ones.
func TestAppendsOfSessionsSharingAConnection(t *testing.T) {
	for _, c := range []struct {
		name       string
		concurrent bool
		maxChunk   int
	}{{"InTurn", false, 9 << 10}, {"AtOnce", true, 9 << 10}, {"AtOnceLarge", true, 96 << 10}} {
		t.Run(c.name, func(t *testing.T) { appendsSharingAConnection(t, c.concurrent, c.maxChunk) })
	}
}

func appendsSharingAConnection(t *testing.T, concurrent bool, maxChunk int) {
	d := testdaemon.Start(t)
	c, ctx := dialWrite(t, d)
	const sessions, appends = 4, 40
	ids := make([]string, sessions)
	for i := range ids {
		res, err := c.Begin(ctx, protocol.BeginParams{Intent: "reuse", TargetFile: fmt.Sprintf("s%d.txt", i),
			WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.SessionID
	}
	want := make([]strings.Builder, sessions)
	totals := make([]int64, sessions)
	// appendOne sends session i's chunk seq and checks its reply.
	appendOne := func(i, seq int) error {
		// Sizes from 1 byte to maxChunk, the escapes of a newline and
		// a quote in each, so that frames land in buffers of other sizes
		// and other sessions' chunks before.
		n := (seq*977*(maxChunk>>13) + i*331) % maxChunk
		chunk := fmt.Sprintf("%d/%d \"", i, seq) + strings.Repeat(string(rune('a'+i)), n) + "\n"
		res, err := c.Append(ctx, protocol.AppendParams{SessionID: ids[i], Seq: uint64(seq), Chunk: chunk})
		totals[i] += int64(len(chunk))
		if err != nil {
			return fmt.Errorf("session %d seq %d: %w", i, seq, err)
		}
		if res.SessionID != ids[i] || res.Seq != uint64(seq) || res.Bytes != totals[i] {
			return fmt.Errorf("session %d seq %d answered %+v, want session %s at %d bytes", i, seq, res, ids[i], totals[i])
		}
		want[i].WriteString(chunk)
		return nil
	}
	if concurrent {
		errs := make(chan error, sessions)
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 1; seq <= appends; seq++ {
					if err := appendOne(i, seq); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	} else {
		for seq := 1; seq <= appends; seq++ {
			for i := range sessions {
				if err := appendOne(i, seq); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for i, id := range ids {
		got, err := c.Content(ctx, protocol.ContentParams{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != want[i].String() {
			t.Errorf("session %d holds %d bytes that differ from the %d appended", i, len(got.Content), want[i].Len())
		}
	}
}
