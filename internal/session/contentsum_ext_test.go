package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// A finalize reports the SHA-256 of what it wrote, content and file, for
// a stream of large and small chunks, with or without its end marker and
// text after it, streamed from the journal (over ValidateMaxBytes) or
// checked in memory; streamed, the content's hash is the one taken as the
// chunks arrived, and after a restart one taken as it is written.
func TestFinalizeSHA256OfStreamedContent(t *testing.T) {
	for _, limit := range []int64{0, 64 << 10} {
		t.Run(fmt.Sprint("ValidateMaxBytes", limit), func(t *testing.T) {
			finalizeSHA256(t, limit, false)
		})
	}
	t.Run("Restarted", func(t *testing.T) { finalizeSHA256(t, 64<<10, true) })
}

func finalizeSHA256(t *testing.T, limit int64, restart bool) {
	h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.ValidateMaxBytes = limit })
	big := strings.Repeat("line of a large file\n", 200<<10/21)
	for i, tc := range []struct {
		name   string
		chunks func(marker string) []string
	}{
		{"LargeChunks", func(string) []string { return []string{big, big, "tail\n"} }},
		{"NoFinalNewline", func(string) []string { return []string{big, "last"} }},
		{"MarkerSplit", func(m string) []string { return []string{big, "end\n  " + m[:3], m[3:] + "\nafter the marker\n"} }},
		{"MarkerInLargeChunk", func(m string) []string { return []string{big + m + "\n" + big} }},
		{"MarkerPrefixLastLine", func(m string) []string { return []string{"a\n", big, m[:4]} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("sum-%d.txt", i)
			b := h.begin(protocol.BeginParams{TargetFile: name, Operation: protocol.OpCreate})
			h.append(b.SessionID, tc.chunks(b.EndMarker)...)
			if restart {
				h.close()
				h.open()
			}
			res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: b.SessionID, EndOfInput: true})
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(h.read(name)))
			want := hex.EncodeToString(sum[:])
			if res.SHA256 != want || res.FileSHA256 != want {
				t.Errorf("sha256 %s, file_sha256 %s; the file's is %s", res.SHA256, res.FileSHA256, want)
			}
		})
	}
}
