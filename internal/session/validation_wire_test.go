package session

import (
	"reflect"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
	"github.com/orion-agent/orion/protocol"
)

// The engine's findings and repairs reach the wire as a JSON round trip
// between the two types would carry them, invalid UTF-8 included.
func TestWireFormOfValidation(t *testing.T) {
	bad := "snippet \xff\xfe with bad bytes"
	for name, report := range map[string]validate.Report{
		"none":  {FileType: "text", SyntaxOK: true},
		"empty": {FileType: "json", SyntaxOK: true, Findings: []validate.Finding{}},
		"findings": {FileType: "go", Checker: "go/parser", Truncated: true, Findings: []validate.Finding{
			{Code: "syntax_error", Category: "syntax", Severity: "error", Line: 3, Column: 7, Message: "expected }", Snippet: bad},
			{Code: "lazy_placeholder", Category: "placeholder", Severity: "warning", Message: "m \xc3", Preexisting: true},
		}},
	} {
		want := &protocol.Validation{}
		if err := convert(report, want); err != nil {
			t.Fatal(err)
		}
		if got := validationOf(report); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, got, want)
		}
	}
	for name, fixes := range map[string][]validate.Fix{
		"none":  nil,
		"empty": {},
		"some":  {{Kind: validate.FixLineEndings, Message: "changed", Count: 2}, {Kind: "k", Message: bad, Line: 4}},
	} {
		var want []protocol.Repair
		if err := convert(fixes, &want); err != nil {
			t.Fatal(err)
		}
		if got := repairsOf(fixes); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, got, want)
		}
	}
}
