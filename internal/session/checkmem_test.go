package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// A finalize whose check finds no room in the budget for content checked
// in memory waits for it; a caller gone meanwhile gets its context's
// error, nothing is written, and the session can still be finalized.
func TestFinalizeWaitsForCheckMemory(t *testing.T) {
	const budget = 64 << 10
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.CheckMemoryBytes = budget })
	b := h.begin(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpCreate})
	h.append(b.SessionID, "hello\n", b.EndMarker+"\n")

	release := session.HoldCheckMemory(h.mgr, budget)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.mgr.FinalizeContext(ctx, protocol.FinalizeParams{SessionID: b.SessionID})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("finalize with the budget taken and its caller gone: %v, want %v", err, context.Canceled)
	}
	if h.exists("a.txt") {
		t.Fatal("a.txt written by a finalize that gave up")
	}

	done := make(chan error, 1)
	go func() {
		_, err := h.mgr.FinalizeContext(context.Background(), protocol.FinalizeParams{SessionID: b.SessionID})
		done <- err
	}()
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := h.read("a.txt"); got != "hello\n" {
		t.Errorf("a.txt = %q", got)
	}
}

// Content that needs more than the whole budget is checked alone, not
// refused and not kept waiting for ever.
func TestFinalizeOverCheckMemoryRunsAlone(t *testing.T) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.CheckMemoryBytes = 4 << 10 })
	if err := os.WriteFile(filepath.Join(h.root, "a.txt"), []byte(strings.Repeat("old\n", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("new\n", 8192)
	_, res, err := h.writeAll(protocol.BeginParams{TargetFile: "a.txt", Operation: protocol.OpOverwrite}, strings.TrimSuffix(content, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Validation == nil || res.Validation.Skipped != "" || h.read("a.txt") != content {
		t.Errorf("result %+v", res)
	}
}
