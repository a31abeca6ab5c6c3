package protocol_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// TestCheck: each limit holds at its value and refuses one byte (or item,
// or millisecond) more, naming the field and the limit.
func TestCheck(t *testing.T) {
	n := strings.Repeat
	type checker interface{ Check() error }
	for _, tc := range []struct {
		name   string
		p      checker
		reason string // "" for accepted
		field  string
		limit  int64
	}{
		{"OK", &protocol.BeginParams{Intent: n("i", protocol.MaxIntentBytes), TargetFile: n("p", protocol.MaxPathBytes),
			WorkspaceRoot: n("w", protocol.MaxPathBytes), IdleMS: protocol.MaxSessionTimeoutMS, AutoFinalizeMS: protocol.MaxSessionTimeoutMS}, "", "", 0},
		{"Intent", &protocol.BeginParams{Intent: n("i", protocol.MaxIntentBytes+1)}, protocol.ReasonFieldTooLarge, "intent", protocol.MaxIntentBytes},
		{"TargetFile", &protocol.BeginParams{TargetFile: n("p", protocol.MaxPathBytes+1)}, protocol.ReasonFieldTooLarge, "target_file", protocol.MaxPathBytes},
		{"WorkspaceRoot", &protocol.BeginParams{WorkspaceRoot: n("w", protocol.MaxPathBytes+1)}, protocol.ReasonFieldTooLarge, "workspace_root", protocol.MaxPathBytes},
		{"Operation", &protocol.BeginParams{Operation: protocol.Operation(n("o", 65))}, protocol.ReasonFieldTooLarge, "operation", protocol.MaxNameBytes},
		{"Supersedes", &protocol.BeginParams{Supersedes: n("s", 129)}, protocol.ReasonFieldTooLarge, "supersedes", protocol.MaxIDBytes},
		{"PatchSpec", &protocol.BeginParams{PatchSpec: []byte(`"` + n("m", protocol.MaxPatchSpecBytes) + `"`)}, protocol.ReasonFieldTooLarge, "patch_spec", protocol.MaxPatchSpecBytes},
		{"ValidationCategory", &protocol.BeginParams{Validation: &protocol.ValidationPolicy{Categories: map[string]string{"syntax": n("x", 65)}}},
			protocol.ReasonFieldTooLarge, "validation.categories.syntax", protocol.MaxNameBytes},
		{"IdleNegative", &protocol.BeginParams{IdleMS: -1}, protocol.ReasonInvalidDuration, "idle_ms", protocol.MaxSessionTimeoutMS},
		{"IdleOverflow", &protocol.BeginParams{IdleMS: math.MaxInt64}, protocol.ReasonInvalidDuration, "idle_ms", protocol.MaxSessionTimeoutMS},
		{"AutoFinalizeOverADay", &protocol.BeginParams{AutoFinalizeMS: protocol.MaxSessionTimeoutMS + 1}, protocol.ReasonInvalidDuration, "auto_finalize_ms", protocol.MaxSessionTimeoutMS},
		{"AppendSessionID", &protocol.AppendParams{SessionID: n("s", 129), Chunk: n("c", 1<<20)}, protocol.ReasonFieldTooLarge, "session_id", protocol.MaxIDBytes},
		{"FinalizeSessionID", &protocol.FinalizeParams{SessionID: n("s", 129)}, protocol.ReasonFieldTooLarge, "session_id", protocol.MaxIDBytes},
		{"AllowRootPath", &protocol.AllowRootParams{Path: n("p", protocol.MaxPathBytes+1)}, protocol.ReasonFieldTooLarge, "path", protocol.MaxPathBytes},
		{"SessionID", &protocol.SessionIDParams{SessionID: n("s", 129)}, protocol.ReasonFieldTooLarge, "session_id", protocol.MaxIDBytes},
		{"CleanNegative", &protocol.CleanParams{OlderThanMS: -5}, protocol.ReasonInvalidDuration, "older_than_ms", protocol.MaxCleanAgeMS},
		{"CleanOverflow", &protocol.CleanParams{FinishedOlderThanMS: math.MaxInt64}, protocol.ReasonInvalidDuration, "finished_older_than_ms", protocol.MaxCleanAgeMS},
		{"TxFiles", &protocol.TxBeginParams{Files: make([]protocol.BeginParams, protocol.MaxTxFiles+1)}, protocol.ReasonFieldTooLarge, "files", protocol.MaxTxFiles},
		{"TxFileField", &protocol.TxBeginParams{Files: []protocol.BeginParams{{}, {TargetFile: n("p", protocol.MaxPathBytes+1)}}},
			protocol.ReasonFieldTooLarge, "files[1].target_file", protocol.MaxPathBytes},
		{"TxFileDuration", &protocol.TxBeginParams{Files: []protocol.BeginParams{{AutoFinalizeMS: -1}}}, protocol.ReasonInvalidDuration, "files[0].auto_finalize_ms", protocol.MaxSessionTimeoutMS},
		{"TxID", &protocol.TxIDParams{TxID: n("t", 129)}, protocol.ReasonFieldTooLarge, "tx_id", protocol.MaxIDBytes},
		{"TxCommitID", &protocol.TxCommitParams{TxID: n("t", 129)}, protocol.ReasonFieldTooLarge, "tx_id", protocol.MaxIDBytes},
		{"TraceTypes", &protocol.TraceListParams{TraceFilter: protocol.TraceFilter{Types: make([]string, protocol.MaxTraceTypes+1)}}, protocol.ReasonFieldTooLarge, "types", protocol.MaxTraceTypes},
		{"TraceType", &protocol.TraceFollowParams{TraceFilter: protocol.TraceFilter{Types: []string{"request", n("t", 65)}}}, protocol.ReasonFieldTooLarge, "types[1]", protocol.MaxNameBytes},
		{"TraceAfter", &protocol.TraceListParams{After: n("a", 129)}, protocol.ReasonFieldTooLarge, "after", protocol.MaxIDBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Check()
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			var pe *protocol.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Check: %v, want a *protocol.Error", err)
			}
			if got, want := pe.Data.Reason, tc.reason; got != want {
				t.Fatalf("reason %q, want %q (%v)", got, want, err)
			}
			if pe.Data.Field != tc.field || pe.Data.Limit != tc.limit {
				t.Fatalf("data field %q limit %d, want %q %d", pe.Data.Field, pe.Data.Limit, tc.field, tc.limit)
			}
			if len(pe.Message) > 512 {
				t.Fatalf("the error quotes the value: %d bytes", len(pe.Message))
			}
		})
	}
}

func TestCheckMethod(t *testing.T) {
	if err := protocol.CheckMethod(protocol.MethodSessionBegin); err != nil {
		t.Fatal(err)
	}
	err := protocol.CheckMethod(strings.Repeat("m", 16<<10))
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Data.Reason != protocol.ReasonFieldTooLarge || pe.Data.Field != "method" || pe.Code != protocol.CodeTooLarge {
		t.Fatalf("CheckMethod of 16 KiB: %v", err)
	}
}
