package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// The sentences the engine joins into one message (a finding, the edit
// engine's report, the next step) each end with one period: no "..", no
// sentence run into the next one. The next step is also data.next, so a
// client that takes other steps can cut it off.
func TestRefusalMessagesJoinSentences(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.root, "m.go"), []byte(goFile), 0o644)
	check := func(t *testing.T, pe *protocol.Error, next string) {
		t.Helper()
		if pe.Data.Next != next {
			t.Errorf("data.next = %q, want %q", pe.Data.Next, next)
		}
		if !strings.HasSuffix(pe.Message, ". "+next) {
			t.Errorf("message does not end with a sentence and then data.next:\n%s", pe.Message)
		}
		if strings.Contains(pe.Message, "..") {
			t.Errorf("message has a double period:\n%s", pe.Message)
		}
	}

	t.Run("EditFailed", func(t *testing.T) {
		b := h.begin(protocol.BeginParams{TargetFile: "m.go", Operation: protocol.OpEdit})
		h.append(b.SessionID, "<<<<<<< SEARCH\nnot in the file\n=======\nx\n>>>>>>> REPLACE\n"+b.EndMarker)
		pe := asProtocolError(t, h.finalizeErr(b.SessionID))
		check(t, pe, fmt.Sprintf("Resend the whole edit, with the failed parts fixed, in a new session with supersedes=%s.", b.SessionID))
	})
	t.Run("ValidationFailed", func(t *testing.T) {
		b := h.begin(protocol.BeginParams{TargetFile: "cut.json", Operation: protocol.OpCreate})
		h.append(b.SessionID, "{\"a\": [1,2\n"+b.EndMarker)
		pe := asProtocolError(t, h.finalizeErr(b.SessionID))
		check(t, pe, fmt.Sprintf("Fix them and write the whole file again in a new session with supersedes=%s (2 attempts left).", b.SessionID))
	})
	t.Run("TxRefused", func(t *testing.T) {
		tx := h.txBegin([]protocol.BeginParams{{TargetFile: "t.json", Operation: protocol.OpCreate}}, []string{"{\"a\": [1,2\n"})
		_, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
		pe := asProtocolError(t, err)
		check(t, pe, "Content a check refused stays as it is: abort this transaction and begin a new one with the corrected files.")
	})
}
