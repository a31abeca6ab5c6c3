package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// A summary's sha256 is the written file's, whether the finalize took it
// from the running sum of a large first chunk (content written as sent) or
// hashed the repaired content itself.
func TestSummaryHashIsTheFilesAfterALargeFirstChunk(t *testing.T) {
	line := strings.Repeat("y", 63)
	// The marker on a line of its own after the content's last newline:
	// the content is exactly what was sent before it.
	for name, tc := range map[string]struct{ content, want string }{
		"as sent":           {strings.Repeat(line+"\n", 2000), strings.Repeat(line+"\n", 2000)},
		"line endings":      {strings.Repeat(line+"\r\n", 2000), strings.Repeat(line+"\n", 2000)},
		"a blank line more": {strings.Repeat(line+"\n", 2000) + "\n", strings.Repeat(line+"\n", 2000) + "\n"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			b := h.begin(protocol.BeginParams{TargetFile: "big.txt", Operation: protocol.OpCreate})
			h.append(b.SessionID, tc.content, b.EndMarker+"\n")
			res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			got := h.read("big.txt")
			if got != tc.want {
				t.Fatalf("file holds %d bytes, want %d", len(got), len(tc.want))
			}
			sum := sha256.Sum256([]byte(got))
			if want := hex.EncodeToString(sum[:]); res.SHA256 != want || res.FileSHA256 != want {
				t.Fatalf("summary sha256 %s, file_sha256 %s; the file's is %s", res.SHA256, res.FileSHA256, want)
			}
		})
	}
}
