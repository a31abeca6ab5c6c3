package daemon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

// Targets and counts that cannot be right are refused as such, by
// session.begin and session.write alike, before anything is written.
func TestBeginRefusesMalformedTargetsAndCounts(t *testing.T) {
	d := testdaemon.Start(t)
	c, ctx := dialWrite(t, d)
	for _, tc := range []struct {
		name         string
		p            protocol.BeginParams
		code         int64
		reason       string
		field, notIn string
	}{
		{"TrailingSlash", protocol.BeginParams{TargetFile: "dir/", Operation: protocol.OpCreate},
			protocol.CodeInvalidTarget, protocol.ReasonIsDirectory, "target_file", ""},
		{"NUL", protocol.BeginParams{TargetFile: "a\x00b.txt", Operation: protocol.OpCreate},
			protocol.CodeInvalidParams, protocol.ReasonMalformedParams, "target_file", "\x00"},
		{"NegativeExpectedBytes", protocol.BeginParams{TargetFile: "n.txt", Operation: protocol.OpCreate, ExpectedBytes: -1},
			protocol.CodeInvalidParams, protocol.ReasonMalformedParams, "expected_bytes", ""},
		{"NegativeExpectedLines", protocol.BeginParams{TargetFile: "n.txt", Operation: protocol.OpCreate, ExpectedLines: -5},
			protocol.CodeInvalidParams, protocol.ReasonMalformedParams, "expected_lines", ""},
	} {
		tc.p.WorkspaceRoot = d.Root
		check := func(t *testing.T, err error) {
			t.Helper()
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Data.Reason != tc.reason || pe.Data.Field != tc.field {
				t.Fatalf("got %v, want code %d %s naming %s", err, tc.code, tc.reason, tc.field)
			}
			if tc.notIn != "" && strings.Contains(pe.Message, tc.notIn) {
				t.Errorf("the message echoes %q: %q", tc.notIn, pe.Message)
			}
		}
		t.Run(tc.name+"/Begin", func(t *testing.T) {
			_, err := c.Begin(ctx, tc.p)
			check(t, err)
		})
		t.Run(tc.name+"/Write", func(t *testing.T) {
			_, err := c.Write(ctx, protocol.WriteParams{BeginParams: tc.p, Content: "x\n"})
			check(t, err)
		})
	}
	for _, name := range []string{"dir", "n.txt"} {
		if _, err := os.Lstat(filepath.Join(d.Root, name)); !os.IsNotExist(err) {
			t.Errorf("%s exists after the refusals (%v)", name, err)
		}
	}
}
