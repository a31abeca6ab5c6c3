package protocol_test

import (
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// Each stage's predicates, in one table: what takes chunks, what takes a
// finalize, what may still lead to a write, what is over for good.
func TestStagePredicates(t *testing.T) {
	tests := []struct {
		stage                                      protocol.Stage
		acceptsContent, open, unfinished, finished bool
	}{
		{protocol.StageAwaitingContent, true, true, true, false},
		{protocol.StageStreaming, true, true, true, false},
		{protocol.StageFinalizing, false, true, true, false},
		{protocol.StageCompleted, false, false, false, true},
		{protocol.StageAborted, false, false, false, true},
		{protocol.StageTruncated, false, false, true, false},
		{protocol.StageNeedsCorrections, false, false, true, false},
		{protocol.StageExpired, false, false, false, true},
		{protocol.StageSuperseded, false, false, false, false},
	}
	if len(tests) != len(protocol.Stages) {
		t.Fatalf("%d stages tested, protocol.Stages has %d", len(tests), len(protocol.Stages))
	}
	for _, tc := range tests {
		s := tc.stage
		if s.AcceptsContent() != tc.acceptsContent || s.Open() != tc.open || s.Unfinished() != tc.unfinished || s.Finished() != tc.finished {
			t.Errorf("%s: AcceptsContent %v Open %v Unfinished %v Finished %v, want %v %v %v %v", s,
				s.AcceptsContent(), s.Open(), s.Unfinished(), s.Finished(), tc.acceptsContent, tc.open, tc.unfinished, tc.finished)
		}
	}
}
