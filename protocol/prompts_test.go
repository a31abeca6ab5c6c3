package protocol_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

func TestFill(t *testing.T) {
	tests := []struct {
		name, template string
		pairs          []string
		want           string
	}{
		{"OK", "Writing {target} stopped: {message}.", []string{"target", "a.go", "message", "gone"}, "Writing a.go stopped: gone."},
		{"NoPairs", "{target}", nil, "{target}"},
		{"MissingValueStays", "{target} and {marker}", []string{"target", "a"}, "a and {marker}"},
		// A model's file name or a daemon's message may hold braces: they
		// are text, not placeholders.
		{"ValueNotRescanned", "{target} ends with {marker}", []string{"target", "{marker}", "marker", "M"}, "{marker} ends with M"},
		{"JSONBracesAreText", `<e.g. {"type": 1}> {op}`, []string{"op", "x"}, `<e.g. {"type": 1}> x`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := protocol.Fill(tc.template, tc.pairs...); got != tc.want {
				t.Fatalf("Fill = %q, want %q", got, tc.want)
			}
		})
	}
}

// Advice is given for reasons the daemon sends, and for each refusal of a
// path a model chose.
func TestRefusalAdvice(t *testing.T) {
	documented := map[string]bool{}
	for _, d := range protocol.ErrorReasons {
		documented[d.Reason] = true
	}
	for reason, advice := range protocol.RefusalAdvice {
		if !documented[reason] {
			t.Errorf("advice for %q, which no error carries", reason)
		}
		if advice == "" || !strings.HasSuffix(advice, ".") {
			t.Errorf("advice for %q is not a sentence: %q", reason, advice)
		}
	}
	for _, reason := range []string{protocol.ReasonProtected, protocol.ReasonParentMissing, protocol.ReasonOutsideRoots, protocol.ReasonOutsideWorkspace, protocol.ReasonWorkspaceNotAllowed} {
		if protocol.RefusalAdvice[reason] == "" {
			t.Errorf("no advice for %s", reason)
		}
	}
	// A refusal only the person can lift names the setting to change.
	for reason, setting := range map[string]string{protocol.ReasonProtected: "--allow-protected", protocol.ReasonWorkspaceNotAllowed: "--allow-root"} {
		if a := protocol.RefusalAdvice[reason]; !strings.Contains(a, "tell the person") && !strings.Contains(a, "Tell the person") || !strings.Contains(a, setting) {
			t.Errorf("advice for %s does not tell the model to tell the person %s: %q", reason, setting, a)
		}
	}
	// Missing directories are made: the advice must not send the model
	// looking for one that exists.
	if a := protocol.RefusalAdvice[protocol.ReasonParentMissing]; strings.Contains(a, "directory that exists") {
		t.Errorf("parent_directory_missing advice is stale: %q", a)
	}
}

func TestInstructionsByOperation(t *testing.T) {
	for _, op := range protocol.Operations {
		got := protocol.Instructions(op, "a.go", "__END__")
		if !strings.Contains(got, "a.go") || !strings.HasSuffix(got, "write __END__ on a line of its own.") || strings.Contains(got, "{") {
			t.Errorf("%s: %q", op, got)
		}
	}
}
