package session_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/session"
	"github.com/orion-agent/orion/protocol"
)

func TestInstructions(t *testing.T) {
	const marker = "__END_WRITE_0123456789ab__"
	tests := []struct {
		op      protocol.Operation
		want    []string
		notWant []string
	}{
		{protocol.OpCreate, []string{"the complete content of app.go"}, []string{"patch_spec", "SEARCH"}},
		{protocol.OpOverwrite, []string{"the complete content of app.go"}, nil},
		{protocol.OpAppend, []string{"only the text to add to the end of app.go"}, []string{"complete content"}},
		{protocol.OpPatch, []string{"only the text to insert into app.go", "in place of what patch_spec names", "not the rest of the file"},
			[]string{"complete content"}},
		{protocol.OpEdit, []string{"the edit to app.go", "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "unified diff", "@@",
			"*** Begin Patch", "several files", "all or nothing"}, []string{"complete content"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.op), func(t *testing.T) {
			got := session.Instructions("app.go", tt.op, marker)
			for _, w := range append(tt.want, "write "+marker+" on a line of its own", "plain text", "no JSON") {
				if !strings.Contains(strings.ToLower(got), strings.ToLower(w)) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("%q says %q", got, w)
				}
			}
		})
	}
}
