package attack

import (
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestSuiteReachesDaemon checks the suite's own plumbing: a plain write
// through the raw connection lands, so a refusal elsewhere is the daemon's.
func TestSuiteReachesDaemon(t *testing.T) {
	t.Parallel()
	d := testdaemon.Start(t)
	r := dial(t, d)
	if je := r.write(protocol.BeginParams{TargetFile: d.Root + "/ok.txt", Operation: protocol.OpCreate}, "hello"); je != nil {
		t.Fatalf("plain write refused: %v %s", je, rawData(je))
	}
	if cur, _ := rss(t, d.PID()); cur <= 0 {
		t.Fatalf("rss of pid %d = %d", d.PID(), cur)
	}
}
