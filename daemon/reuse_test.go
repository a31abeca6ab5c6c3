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
// buffer, the request's own memory for params and result) carries nothing
// of one request into another's.
func TestAppendsOfSessionsSharingAConnection(t *testing.T) {
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
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var total int64
			for seq := 1; seq <= appends; seq++ {
				// Sizes from 1 byte to 9 KiB, the escapes of a newline
				// and a quote in each, so that frames land in buffers
				// of other sizes and other sessions' chunks before.
				n := (seq*977 + i*331) % (9 << 10)
				chunk := fmt.Sprintf("%d/%d \"", i, seq) + strings.Repeat(string(rune('a'+i)), n) + "\n"
				res, err := c.Append(ctx, protocol.AppendParams{SessionID: ids[i], Seq: uint64(seq), Chunk: chunk})
				total += int64(len(chunk))
				if err != nil {
					errs <- fmt.Errorf("session %d seq %d: %w", i, seq, err)
					return
				}
				if res.SessionID != ids[i] || res.Seq != uint64(seq) || res.Bytes != total {
					errs <- fmt.Errorf("session %d seq %d answered %+v, want session %s at %d bytes", i, seq, res, ids[i], total)
					return
				}
				want[i].WriteString(chunk)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
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
