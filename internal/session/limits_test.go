package session_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// TestBeginRefusesParamsOutOfBounds: the engine checks every begin, also
// the ones that never came over the socket (spool imports), and journals
// nothing for a refused one.
func TestBeginRefusesParamsOutOfBounds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      protocol.BeginParams
		reason string
		field  string
	}{
		{"Intent", protocol.BeginParams{Intent: strings.Repeat("i", protocol.MaxIntentBytes+1)}, protocol.ReasonFieldTooLarge, "intent"},
		{"TargetFile", protocol.BeginParams{TargetFile: strings.Repeat("d/", protocol.MaxPathBytes)}, protocol.ReasonFieldTooLarge, "target_file"},
		{"PatchSpec", protocol.BeginParams{PatchSpec: []byte(`{"type":"insert_before_marker","marker":"` + strings.Repeat("m", protocol.MaxPatchSpecBytes) + `"}`)}, protocol.ReasonFieldTooLarge, "patch_spec"},
		{"AutoFinalizeMax", protocol.BeginParams{AutoFinalizeMS: math.MaxInt64}, protocol.ReasonInvalidDuration, "auto_finalize_ms"},
		{"IdleMax", protocol.BeginParams{IdleMS: math.MaxInt64}, protocol.ReasonInvalidDuration, "idle_ms"},
		{"IdleNegative", protocol.BeginParams{IdleMS: -1}, protocol.ReasonInvalidDuration, "idle_ms"},
		{"AutoFinalizeOverADay", protocol.BeginParams{AutoFinalizeMS: protocol.MaxSessionTimeoutMS + 1}, protocol.ReasonInvalidDuration, "auto_finalize_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := tc.p
			if p.TargetFile == "" {
				p.TargetFile = "a.txt"
			}
			p.Operation = protocol.OpCreate
			p.WorkspaceRoot = h.root
			_, err := h.mgr.Begin(p)
			if _, reason := code(err); reason != tc.reason {
				t.Fatalf("Begin: %v, want reason %s", err, tc.reason)
			}
			if pe := err.(*protocol.Error); pe.Data.Field != tc.field || pe.Data.Limit == 0 {
				t.Fatalf("error data %+v: want field %s and its limit", pe.Data, tc.field)
			}
			if got := h.mgr.List(true); len(got) != 0 {
				t.Fatalf("a refused begin left %d sessions", len(got))
			}
		})
	}
}

// TestLongestTimeoutIsKept: the longest auto-finalize a session may ask for
// holds for its whole length (2^63-1 ms used to overflow into 2 ms), and
// the retention (1h) does not expire the session before it ends.
func TestLongestTimeoutIsKept(t *testing.T) {
	h := newHarness(t)
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate,
		IdleMS: protocol.MaxSessionTimeoutMS, AutoFinalizeMS: protocol.MaxSessionTimeoutMS})
	h.append(b.SessionID, "no marker yet\n")
	h.clock.Advance(23 * time.Hour)
	if info, _ := h.mgr.Get(b.SessionID); info.Stage != protocol.StageStreaming {
		t.Fatalf("after 23h of a 24h auto-finalize the session is %s", info.Stage)
	}
	h.clock.Advance(time.Hour)
	if info, _ := h.mgr.Get(b.SessionID); info.Stage != protocol.StageTruncated {
		t.Fatalf("after 24h the session is %s, want truncated", info.Stage)
	}
}

// TestTxBeginRefusesTooManyFiles names the list and its limit, and each
// file's fields by index.
func TestTxBeginRefusesTooManyFiles(t *testing.T) {
	h := newHarness(t)
	files := make([]protocol.BeginParams, protocol.MaxTxFiles+1)
	for i := range files {
		files[i] = protocol.BeginParams{TargetFile: fmt.Sprintf("f%d.txt", i), Operation: protocol.OpCreate}
	}
	_, err := h.mgr.TxBegin(protocol.TxBeginParams{WorkspaceRoot: h.root, Files: files})
	if pe, ok := err.(*protocol.Error); !ok || pe.Data.Reason != protocol.ReasonFieldTooLarge || pe.Data.Field != "files" || pe.Data.Limit != protocol.MaxTxFiles {
		t.Fatalf("TxBegin of %d files: %v", len(files), err)
	}
	files = files[:2]
	files[1].Intent = strings.Repeat("i", protocol.MaxIntentBytes+1)
	_, err = h.mgr.TxBegin(protocol.TxBeginParams{WorkspaceRoot: h.root, Files: files})
	if pe, ok := err.(*protocol.Error); !ok || pe.Data.Reason != protocol.ReasonFieldTooLarge || pe.Data.Field != "files[1].intent" {
		t.Fatalf("TxBegin with a long intent in files[1]: %v", err)
	}
	if got := h.mgr.List(true); len(got) != 0 {
		t.Fatalf("a refused tx.begin left %d sessions", len(got))
	}
}
