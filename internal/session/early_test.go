package session_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

// A session.write starts writing its file from the content as sent,
// before the check: the finalize takes that file when the check left the
// content as it was, and otherwise writes what the check settled on,
// leaving nothing of the first file behind.
func TestWriteStagesBeforeTheCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		// old is the file there before, if not "".
		old     string
		op      protocol.Operation
		file    string
		content string
		// taken is what the finalize did with the file written early:
		// nil when none was started.
		taken  []bool
		want   string // the file after the write; "" for none
		reason string // the write's refusal, if refused
	}{
		{name: "AsSent", op: protocol.OpCreate, file: "a.txt", content: "one\ntwo\n", taken: []bool{true}, want: "one\ntwo\n"},
		{name: "Overwrite", old: "old\n", op: protocol.OpOverwrite, file: "a.txt", content: "new\n", taken: []bool{true}, want: "new\n"},
		{name: "EmptyFile", op: protocol.OpCreate, file: "a.txt", content: "", taken: []bool{true}, want: ""},
		// The check adds the byte order mark the old file starts with:
		// the file written early is dropped.
		{name: "Repaired", old: "\ufeffold\n", op: protocol.OpOverwrite, file: "a.txt", content: "new\n", taken: []bool{false}, want: "\ufeffnew\n"},
		{name: "Refused", op: protocol.OpCreate, file: "c.json", content: "{\"a\": 1,\n", taken: []bool{false}, reason: protocol.ReasonValidationFailed},
		// A final newline to add: nothing is written before the check.
		{name: "LikelyRepaired", op: protocol.OpCreate, file: "a.txt", content: "no newline", want: "no newline\n"},
		{name: "Append", old: "one\n", op: protocol.OpAppend, file: "a.txt", content: "two\n", want: "one\ntwo\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			target := filepath.Join(h.root, c.file)
			if c.old != "" {
				if err := os.WriteFile(target, []byte(c.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var taken []bool
			defer session.SetEarlyHook(func(ok bool) { taken = append(taken, ok) })()
			_, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: c.file, Operation: c.op}, Content: c.content})
			if c.reason != "" {
				protoErr(t, err, c.reason)
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(taken, c.taken) {
				t.Errorf("file written before the check taken: %v, want %v", taken, c.taken)
			}
			got, err := os.ReadFile(target)
			switch {
			case c.reason != "" && !os.IsNotExist(err):
				t.Errorf("%s after a refused write: %q, %v; want none", c.file, got, err)
			case c.reason == "" && (err != nil || string(got) != c.want):
				t.Errorf("%s: %q, %v; want %q", c.file, got, err, c.want)
			}
			names, err := os.ReadDir(h.root)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if n.Name() != c.file {
					t.Errorf("%s left beside the target", n.Name())
				}
			}
		})
	}
}

// The directory a session.write's file was started in may move before the
// file is named (here: out of the workspace, another directory made in its
// place). The file is then written where the target's path leads at that
// moment, as every other step of the request checks its directory again,
// and nothing lands in the directory that moved away.
func TestWriteStagedEarlyDirectoryMoved(t *testing.T) {
	for _, op := range []protocol.Operation{protocol.OpCreate, protocol.OpOverwrite} {
		t.Run(string(op), func(t *testing.T) {
			h := newHarness(t)
			sub := filepath.Join(h.root, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if op == protocol.OpOverwrite {
				if err := os.WriteFile(filepath.Join(sub, "a.txt"), []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			away := filepath.Join(t.TempDir(), "away")
			var taken []bool
			defer session.SetEarlyHook(func(ok bool) {
				taken = append(taken, ok)
				if err := os.Rename(sub, away); err != nil {
					t.Error(err)
				}
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Error(err)
				}
			})()
			_, err := h.write(protocol.WriteParams{BeginParams: protocol.BeginParams{TargetFile: "sub/a.txt", Operation: op}, Content: "new\n"})
			if len(taken) != 1 {
				t.Skipf("no file written before the check here (%v)", taken)
			}
			if got, _ := os.ReadFile(filepath.Join(away, "a.txt")); string(got) == "new\n" {
				t.Errorf("the directory that moved out of the workspace holds a.txt %q", got)
			}
			if err == nil {
				if got, rerr := os.ReadFile(filepath.Join(sub, "a.txt")); rerr != nil || string(got) != "new\n" {
					t.Errorf("sub/a.txt after the write: %q, %v; want the content written", got, rerr)
				}
			}
		})
	}
}
