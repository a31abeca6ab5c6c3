package controller

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/protocol"
)

// What the person watching an agent reads of a refused write says once
// that the file was not written, with the findings, and never the
// daemon's instructions for the model.
func TestNotWrittenIsForThePerson(t *testing.T) {
	next := "Write the corrected file in a new session with supersedes=abc."
	for _, tc := range []struct {
		name string
		pe   *protocol.Error
		want []string
	}{
		{"Validation", &protocol.Error{Code: protocol.CodeValidationFailed,
			Message: "The file was not written: 1 problem must be fixed first. [json_syntax] unexpected end. Send the corrected complete content. " + next,
			Data: protocol.ErrorData{Reason: protocol.ReasonValidationFailed, Next: next, Validation: &protocol.Validation{
				Blocked:  true,
				Findings: []protocol.Finding{{Severity: "error", Line: 2, Code: "json_syntax", Message: "unexpected end."}}}}},
			[]string{"cfg.json was not written: line 2: unexpected end [json_syntax]"}},
		{"Other", &protocol.Error{Code: protocol.CodeTargetChanged, Message: "cfg.json changed on disk since the session began. " + next,
			Data: protocol.ErrorData{Reason: protocol.ReasonTargetChanged, Next: next}},
			[]string{"cfg.json was not written: cfg.json changed on disk since the session began"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := notWritten("cfg.json", tc.pe, tc.pe.Message)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			if n := strings.Count(got, "not written"); n != 1 {
				t.Errorf("%q says %d times that the file was not written", got, n)
			}
			for _, model := range []string{"Send the corrected", "supersedes"} {
				if strings.Contains(got, model) {
					t.Errorf("%q shows the model's instruction %q", got, model)
				}
			}
		})
	}
}
