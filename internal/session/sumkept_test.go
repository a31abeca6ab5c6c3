package session_test

import (
	"fmt"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/protocol"
)

// Whether or not a session's appends kept a running sum of its content
// (one is kept only from a first chunk of a file streamed whole), its
// finalize reports, and records, the sha256 of the file it wrote: for
// sessions whose first chunk is small, 64 KiB, just under or at the size
// that starts a sum, streamed or continued or resumed after a restart, with
// the content checked in memory or too large to be and streamed from the
// journal.
func TestFinalizeSumWithOrWithoutARunningSum(t *testing.T) {
	content := streamText(1<<20+300<<10+77, "sum")
	want := sha(content)
	for _, first := range []int{16 << 10, 64 << 10, 256<<10 - 1, 256 << 10, 1 << 20} {
		rests := []int{first}
		if first != 1<<20 {
			rests = append(rests, 1<<20)
		}
		for _, rest := range rests {
			for _, validate := range []int64{session.DefaultValidateMaxBytes, 256 << 10} {
				for _, mode := range []string{"whole", "restarted", "continued"} {
					name := fmt.Sprintf("first%d/rest%d/check%d/%s", first, rest, validate, mode)
					t.Run(name, func(t *testing.T) {
						h := newHarnessTweaked(t, store.Options{}, func(c *session.Config) { c.ValidateMaxBytes = validate })
						chunks := append([]string{content[:first]}, chunked(content[first:], rest)...)
						begin := protocol.BeginParams{TargetFile: "f.txt", Operation: protocol.OpCreate}
						if mode == "continued" {
							begin.ExpectedLines = 1 << 20
						}
						b := h.begin(begin)
						half := len(chunks) / 2
						h.append(b.SessionID, chunks[:half]...)
						id, marker := b.SessionID, b.EndMarker
						switch mode {
						case "restarted":
							h.close()
							h.open()
						case "continued":
							h.clock.Advance(session.DefaultAutoFinalize)
							next, err := h.mgr.Continue(b.SessionID)
							if err != nil {
								t.Fatal(err)
							}
							id, marker = next.SessionID, next.EndMarker
						}
						tail := append([]string(nil), chunks[half:]...)
						tail[len(tail)-1] += marker + "\n"
						h.append(id, tail...)
						res, err := h.mgr.Finalize(protocol.FinalizeParams{SessionID: id})
						if err != nil {
							t.Fatal(err)
						}
						if got := h.read("f.txt"); got != content {
							t.Fatalf("file of %d bytes, want %d", len(got), len(content))
						}
						if res.SHA256 != want || res.FileSHA256 != want {
							t.Fatalf("finalize reports sha256 %s, file %s; the file's is %s", res.SHA256, res.FileSHA256, want)
						}
						h.close()
						h.open()
						info, err := h.mgr.Get(id)
						if err != nil {
							t.Fatal(err)
						}
						if info.Result == nil || info.Result.SHA256 != want || info.Result.FileSHA256 != want {
							t.Fatalf("recorded result %+v; the file's sha256 is %s", info.Result, want)
						}
					})
				}
			}
		}
	}
}

// A transaction's members report the sha256 of what they wrote, however
// they were sent.
func TestTxCommitSumWithOrWithoutARunningSum(t *testing.T) {
	h := newHarness(t)
	big := streamText(1<<20+5, "tx")
	tx, err := h.mgr.TxBegin(protocol.TxBeginParams{WorkspaceRoot: h.root, Files: []protocol.BeginParams{
		{TargetFile: "big.txt", Operation: protocol.OpCreate},
		{TargetFile: "small.txt", Operation: protocol.OpCreate},
	}})
	if err != nil {
		t.Fatal(err)
	}
	contents := []string{big, "small\n"}
	for i, s := range tx.Sessions {
		chunks := chunked(contents[i], 300<<10)
		chunks[len(chunks)-1] += s.EndMarker + "\n"
		h.append(s.SessionID, chunks...)
	}
	res, err := h.mgr.TxCommit(protocol.TxCommitParams{TxID: tx.TxID})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range res.Files {
		if want := sha(contents[i]); f.SHA256 != want || f.FileSHA256 != want {
			t.Errorf("%s: sha256 %s, file %s, want %s", f.TargetFile, f.SHA256, f.FileSHA256, want)
		}
	}
}
