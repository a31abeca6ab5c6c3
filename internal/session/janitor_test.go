package session_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

func TestAbandonedSessionsExpireAndFinishedOnesArePruned(t *testing.T) {
	h := newHarness(t)
	open := h.begin(protocol.BeginParams{TargetFile: "open.txt", Operation: protocol.OpCreate})
	h.append(open.SessionID, "partial\n")
	done := h.begin(protocol.BeginParams{TargetFile: "done.txt", Operation: protocol.OpCreate})
	h.append(done.SessionID, "x\n"+done.EndMarker)
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: done.SessionID}); err != nil {
		t.Fatal(err)
	}

	// Past the auto-finalize the open session is truncated, which keeps it:
	// truncated content is continuable until the retention runs out.
	h.clock.Advance(30 * time.Minute)
	if info, _ := h.mgr.Get(open.SessionID); info.Stage != protocol.StageTruncated {
		t.Fatalf("after 30m: stage %s, want truncated", info.Stage)
	}
	h.clock.Advance(31 * time.Minute)
	info, err := h.mgr.Get(open.SessionID)
	if err != nil || info.Stage != protocol.StageExpired {
		t.Fatalf("after 61m: %+v %v, want expired", info, err)
	}
	if _, err := h.st.Chunk(open.SessionID, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired session still holds its chunks: %v", err)
	}
	if info, _ := h.mgr.Get(done.SessionID); info.Stage != protocol.StageCompleted || info.Result == nil {
		t.Fatalf("completed session lost its summary within the summary retention: %+v", info)
	}

	h.clock.Advance(session.DefaultSummaryRetention + 2*time.Minute)
	for _, id := range []string{open.SessionID, done.SessionID} {
		if _, err := h.mgr.Get(id); err == nil {
			t.Fatalf("session %s survived the summary retention", id)
		}
		if _, err := h.st.Meta(id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("session %s still in the store: %v", id, err)
		}
	}
}

// TestStoreDoesNotGrowUnderASteadyStreamOfSessions writes rounds of
// sessions, cleaning between rounds, and checks that the bbolt file stops
// growing once freed pages are reused.
func TestStoreDoesNotGrowUnderASteadyStreamOfSessions(t *testing.T) {
	h := newHarness(t)
	chunk := strings.Repeat("a line of content\n", 200)
	var sizes []int64
	for round := range 6 {
		for i := range 40 {
			b := h.begin(protocol.BeginParams{TargetFile: fmt.Sprintf("r%d-%d.txt", round, i), Operation: protocol.OpCreate})
			for range 8 {
				h.append(b.SessionID, chunk)
			}
			h.append(b.SessionID, b.EndMarker+"\n")
			if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID}); err != nil {
				t.Fatal(err)
			}
		}
		h.clock.Advance(time.Second)
		if res := h.mgr.Clean(time.Hour, time.Millisecond); len(res.Pruned) != 40 {
			t.Fatalf("round %d pruned %d sessions, want 40", round, len(res.Pruned))
		}
		st, err := h.st.Stats()
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.HighWater)
	}
	t.Logf("store high-water mark after each round: %v", sizes)
	// Each round journals ~1.2 MB; without page reuse the high-water mark
	// would climb by about that much per round. A page or two of slack is
	// bbolt keeping pages a reader still sees.
	perRound := int64(40 * 8 * len(chunk))
	if last, second := sizes[len(sizes)-1], sizes[1]; last-second > perRound/10 {
		t.Fatalf("store grew from %d to %d bytes over rounds that each left nothing behind (a round writes %d)", second, last, perRound)
	}
}
