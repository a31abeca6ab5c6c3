package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/failpoint"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestSessionWriteKilledWhileStaged: session.write writes its file into a
// temp file without a name while its record is journaled, and names it only
// after. Killed at each step, the target holds its old content or the new
// one, never anything else, and no temp file is left once the daemon is back:
// before the record is durable nothing of the write had a name; after it,
// recovery finishes the write or leaves the old file.
func TestSessionWriteKilledWhileStaged(t *testing.T) {
	const content = "the new content, written whole\n"
	for _, tc := range []struct {
		name, point string
		op          protocol.Operation
		// named is whether the temp file has a name when the kill
		// comes (recovery removes it then).
		named bool
		// landed is whether the new content must be there after the
		// restart (recovery writes a session.write whose temp file
		// proves it never landed).
		landed bool
	}{
		{"StagedOverwrite", "atomicfile.hidden-synced=1", protocol.OpOverwrite, false, false},
		{"StagedCreate", "atomicfile.hidden-synced=1", protocol.OpCreate, false, false},
		{"JournalWrite", "contentlog.write=1", protocol.OpOverwrite, false, false},
		{"JournalSync", "contentlog.sync=1", protocol.OpOverwrite, false, false},
		{"BeforeRename", "atomicfile.before-rename=1", protocol.OpOverwrite, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			d.Stop()
			d.Env = []string{failpoint.EnvVar + "=" + tc.point}
			d.Restart()
			c := dial(t, d)
			dir := filepath.Join(d.Root, "w")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "f.txt")
			old := ""
			if tc.op == protocol.OpOverwrite {
				old = originalContent
				if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := c.Write(testCtx(t), protocol.WriteParams{
				BeginParams: protocol.BeginParams{Intent: "killed at " + tc.point, TargetFile: target, Operation: tc.op},
				Content:     content,
			})
			if err == nil {
				if tc.point == "atomicfile.hidden-synced=1" {
					t.Skipf("the write was not staged without a name (no O_TMPFILE on this file system?)\n%s", d.Logs())
				}
				t.Fatalf("the write succeeded although the daemon was to die at %s", tc.point)
			}
			d.Wait()
			holds := func(when string) string {
				t.Helper()
				got, err := os.ReadFile(target)
				switch {
				case errors.Is(err, os.ErrNotExist) && old == "":
					return ""
				case err != nil:
					t.Fatalf("%s: %v", when, err)
				case string(got) != old && string(got) != content:
					t.Fatalf("%s the target holds %q: neither the old content nor the new", when, got)
				}
				return string(got)
			}
			if got := holds("after the kill"); got != old {
				t.Fatalf("the target changed before the write's rename: %q", got)
			}
			if !tc.named {
				assertNoTempFiles(t, dir)
			}
			d.Env = nil
			d.Restart()
			c = dial(t, d)
			if tc.landed {
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) && holds("after the restart") != content {
					time.Sleep(20 * time.Millisecond)
				}
				if got := holds("after the restart"); got != content {
					t.Fatalf("recovery did not finish the write: %q\n%s", got, d.Logs())
				}
			} else if got := holds("after the restart"); got != old {
				t.Fatalf("the target changed with no client to ask for it: %q", got)
			}
			assertNoTempFiles(t, dir)
			if tc.landed {
				return
			}
			// The client, which had no reply, writes again: it lands.
			op := tc.op
			if op == protocol.OpCreate {
				op = protocol.OpOverwrite // a create may have been recovered meanwhile
			}
			if _, err := c.Write(testCtx(t), protocol.WriteParams{
				BeginParams: protocol.BeginParams{Intent: "again", TargetFile: target, Operation: op},
				Content:     content,
			}); err != nil {
				t.Fatalf("writing again after the restart: %v", err)
			}
			if got := holds("after writing again"); got != content {
				t.Fatalf("after writing again the target holds %q", got)
			}
			assertNoTempFiles(t, dir)
		})
	}
}
