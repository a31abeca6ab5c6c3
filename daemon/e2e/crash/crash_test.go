package crash_test

import (
	"context"
	"testing"
	"time"

	"github.com/orion-agent/orion/daemon/e2e/crash"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestNothingAcknowledgedIsLostUnderSIGKILL kills the real daemon 50 times
// while four clients stream, a fifth commits three-file transactions and
// two more run turns and undo them, and checks every byte, every target,
// that no transaction is torn and that no undo is left half-done.
func TestNothingAcknowledgedIsLostUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash run skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := crash.Run(ctx, crash.Config{
		Oriond:  testdaemon.Binary(t),
		Dir:     t.TempDir(),
		Kills:   50,
		Clients: 4,
		// Turn workers undo what they wrote, sessions and plain writes,
		// while the kills land.
		TurnWorkers: 2,
		// Whole files written in one request, some undone, while the
		// kills land between the journal's sync and the index commit.
		WholeWriters: 2,
		Seed:         uint64(time.Now().UnixNano()),
		Logf:         t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kills %d, sessions %d, chunks %d, acknowledged bytes %d, reconnects %d, transactions %d, targets edited after finalize %d (%d reopened in conflict), turns %d, undos %d, redos %d, undos interrupted %d (%d finished at a restart), whole files written %d (%d undone)",
		rep.Kills, rep.Sessions, rep.Chunks, rep.AckedBytes, rep.Reconnects, rep.Transactions, rep.Edited, rep.EditsKeptOpen,
		rep.Turns, rep.Undos, rep.Redos, rep.OpsInterrupted, rep.OpsRecovered, rep.WholeWrites, rep.WholeUndos)
	if !rep.OK() {
		t.Fatalf("lost %d bytes, %d wrong targets, %d torn transactions, %d temp files left, %d finalizes unrecorded, %d edits overwritten:\n%v",
			rep.LostBytes, rep.Mismatched, rep.TornTxs, rep.LeftoverTemps, rep.Unrecorded, rep.Overwritten, rep.Failures)
	}
	if rep.Kills != 50 || rep.Sessions == 0 || rep.Reconnects == 0 || rep.Transactions == 0 || rep.Turns == 0 || rep.Undos == 0 || rep.WholeWrites == 0 {
		t.Fatalf("the run did not exercise crashes: %+v", rep)
	}
}
