package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// TestErrors checks that each refusal carries its stable code and reason,
// and that the daemon keeps serving after each one.
func TestErrors(t *testing.T) {
	d := testdaemon.Start(t, "--max-chunk-bytes", "1024", "--max-session-bytes", "4096")
	c := dial(t, d)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(d.Root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Root, "taken.txt"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d.Root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) string {
		begun, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "open.txt", WorkspaceRoot: d.Root, Operation: protocol.OpOverwrite})
		if err != nil {
			t.Fatal(err)
		}
		return begun.SessionID
	}
	tests := []struct {
		name   string
		call   func(t *testing.T) error
		code   int64
		reason string
	}{
		{"UnknownSession", func(t *testing.T) error {
			_, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: "no-such-session", Seq: 1, Chunk: "x"})
			return err
		}, protocol.CodeSessionNotFound, protocol.ReasonSessionNotFound},
		{"UnknownMethod", func(t *testing.T) error {
			return c.Call(testCtx(t), "session.frobnicate", nil, nil)
		}, protocol.CodeMethodNotFound, protocol.ReasonUnknownMethod},
		{"MalformedParams", func(t *testing.T) error {
			return c.Call(testCtx(t), protocol.MethodSessionAppend, json.RawMessage(`{"session_id":"x","seq":"one"}`), nil)
		}, protocol.CodeInvalidParams, protocol.ReasonMalformedParams},
		{"ParamsNotAnObject", func(t *testing.T) error {
			return c.Call(testCtx(t), protocol.MethodSessionBegin, json.RawMessage(`[1,2]`), nil)
		}, protocol.CodeInvalidParams, protocol.ReasonMalformedParams},
		{"MissingTarget", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{Operation: protocol.OpCreate})
			return err
		}, protocol.CodeInvalidParams, protocol.ReasonMissingField},
		{"UnknownOperation", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "a", WorkspaceRoot: d.Root, Operation: "delete"})
			return err
		}, protocol.CodeInvalidOperation, protocol.ReasonUnknownOperation},
		{"SeqGap", func(t *testing.T) error {
			_, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: open(t), Seq: 2, Chunk: "x"})
			return err
		}, protocol.CodeSeqGap, protocol.ReasonSeqGap},
		{"SeqZero", func(t *testing.T) error {
			_, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: open(t), Seq: 0, Chunk: "x"})
			return err
		}, protocol.CodeInvalidParams, protocol.ReasonSeqZero},
		{"CreateOnExistingFile", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "taken.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			return err
		}, protocol.CodeTargetExists, protocol.ReasonTargetExists},
		{"DotDotOutOfRoot", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "../../etc/passwd", WorkspaceRoot: d.Root, Operation: protocol.OpOverwrite})
			return err
		}, protocol.CodePathNotAllowed, protocol.ReasonOutsideRoots},
		{"AbsolutePathOutOfRoot", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: filepath.Join(outside, "x.txt"), Operation: protocol.OpCreate})
			return err
		}, protocol.CodePathNotAllowed, protocol.ReasonOutsideRoots},
		{"SymlinkOutOfRoot", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "escape/x.txt", WorkspaceRoot: d.Root, Operation: protocol.OpCreate})
			return err
		}, protocol.CodePathNotAllowed, protocol.ReasonSymlinkEscape},
		{"RelativeWithoutWorkspace", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "x.txt", Operation: protocol.OpCreate})
			return err
		}, protocol.CodeInvalidParams, protocol.ReasonRelativePath},
		{"WorkspaceOutsideRoots", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "x.txt", WorkspaceRoot: outside, Operation: protocol.OpCreate})
			return err
		}, protocol.CodePathNotAllowed, protocol.ReasonWorkspaceNotAllowed},
		{"DirectoryTarget", func(t *testing.T) error {
			_, err := c.Begin(testCtx(t), protocol.BeginParams{TargetFile: "dir", WorkspaceRoot: d.Root, Operation: protocol.OpOverwrite})
			return err
		}, protocol.CodeInvalidTarget, protocol.ReasonIsDirectory},
		{"ChunkOverLimit", func(t *testing.T) error {
			_, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: open(t), Seq: 1, Chunk: strings.Repeat("x", 1025)})
			return err
		}, protocol.CodeTooLarge, protocol.ReasonChunkTooLarge},
		{"SessionOverLimit", func(t *testing.T) error {
			id := open(t)
			for seq := uint64(1); seq <= 5; seq++ {
				if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: id, Seq: seq, Chunk: strings.Repeat("x", 1000)}); err != nil {
					return err
				}
			}
			return nil
		}, protocol.CodeTooLarge, protocol.ReasonSessionTooLarge},
		{"FinalizeWithoutMarker", func(t *testing.T) error {
			id := open(t)
			if _, err := c.Append(testCtx(t), protocol.AppendParams{SessionID: id, Seq: 1, Chunk: "half a file"}); err != nil {
				return err
			}
			_, err := c.Finalize(testCtx(t), protocol.FinalizeParams{SessionID: id})
			return err
		}, protocol.CodeMarkerMissing, protocol.ReasonMarkerMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.call(t), tt.code, tt.reason)
			if _, err := c.Status(testCtx(t)); err != nil {
				t.Fatalf("daemon stopped serving after the error: %v", err)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(d.Root, "taken.txt")); string(got) != "keep me\n" {
		t.Fatalf("a refused create touched the existing file: %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("something was written outside the roots: %v", entries)
	}
}
