package session_test

import (
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// TestDryRunStage: a session aborted after its dry run says so (dry_run),
// across a restart; one aborted without a dry run, or written after one,
// does not.
func TestDryRunStage(t *testing.T) {
	h := newHarness(t)
	dry := h.begin(protocol.BeginParams{TargetFile: "dry.txt", Operation: protocol.OpCreate})
	h.append(dry.SessionID, "checked only\n")
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: dry.SessionID, EndOfInput: true, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if info, _ := h.mgr.Get(dry.SessionID); info.DryRun {
		t.Fatal("an open session after a dry run says dry_run")
	}
	if _, err := h.mgr.Abort(dry.SessionID); err != nil {
		t.Fatal(err)
	}
	plain := h.begin(protocol.BeginParams{TargetFile: "plain.txt", Operation: protocol.OpCreate})
	if _, err := h.mgr.Abort(plain.SessionID); err != nil {
		t.Fatal(err)
	}
	written := h.begin(protocol.BeginParams{TargetFile: "written.txt", Operation: protocol.OpCreate})
	h.append(written.SessionID, "written\n")
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: written.SessionID, EndOfInput: true, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: written.SessionID, EndOfInput: true}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for id, want := range map[string]bool{dry.SessionID: true, plain.SessionID: false, written.SessionID: false} {
			info, err := h.mgr.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if info.DryRun != want {
				t.Errorf("%s: session %s (%s): dry_run %v, want %v", when, id, info.Stage, info.DryRun, want)
			}
		}
	}
	check("before a restart")
	h.close()
	h.open()
	check("after a restart")
}
