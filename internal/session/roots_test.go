package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/orion-agent/orion/internal/pathguard"
	"github.com/orion-agent/orion/protocol"
)

// A root put in force while the engine runs takes writes at once; a
// session begun before keeps writing through the roots it began under;
// writes running while the guard changes neither fail nor race.
func TestSetGuardAddsARootWhileRunning(t *testing.T) {
	h := newHarness(t)
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(other, "new.txt")
	if _, err := h.mgr.Begin(protocol.BeginParams{Intent: "i", TargetFile: target, Operation: protocol.OpCreate}); err == nil {
		t.Fatal("a target outside the roots was accepted before the root was added")
	}
	early := h.begin(protocol.BeginParams{Intent: "i", TargetFile: "early.txt", Operation: protocol.OpCreate})
	h.append(early.SessionID, "early\n")

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				_, err := h.mgr.Write(protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "i",
					TargetFile: filepath.Join(h.root, fmt.Sprintf("w%d-%d.txt", i, j)), Operation: protocol.OpCreate}, Content: "x\n"})
				if err != nil {
					t.Errorf("a write while the guard changes: %v", err)
				}
			}
		}()
	}
	g, err := pathguard.New([]string{h.root, other})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.mgr.SetGuard(g); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	if _, err := h.mgr.Write(protocol.WriteParams{BeginParams: protocol.BeginParams{Intent: "i", TargetFile: target,
		Operation: protocol.OpCreate}, Content: "new\n"}); err != nil {
		t.Fatalf("a write in the added root: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new\n" {
		t.Errorf("%s holds %q", target, b)
	}
	if _, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: early.SessionID, EndOfInput: true}); err != nil {
		t.Fatalf("finalizing a session begun before the root was added: %v", err)
	}
	if got := h.read("early.txt"); got != "early\n" {
		t.Errorf("early.txt holds %q", got)
	}

	// A guard without a root in force is refused: roots are only added.
	narrow, err := pathguard.New([]string{other})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.mgr.SetGuard(narrow); err == nil {
		t.Error("SetGuard dropped a root in force")
	}
}
