package validate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

func TestDefaultPolicies(t *testing.T) {
	want := map[validate.Category]validate.Policy{
		validate.CategoryDataSyntax:     validate.PolicyStrict,
		validate.CategoryTruncation:     validate.PolicyStrict,
		validate.CategoryPlaceholder:    validate.PolicyStrict,
		validate.CategoryCodeSyntax:     validate.PolicyWarn,
		validate.CategoryTruncationHint: validate.PolicyWarn,
		validate.CategoryEndMarker:      validate.PolicyWarn,
	}
	for _, c := range validate.Categories {
		if got := (validate.Policies{}).For(c); got != want[c] {
			t.Errorf("default for %s = %s, want %s", c, got, want[c])
		}
	}
}

func TestDecideDefaults(t *testing.T) {
	tests := []struct {
		name, path, content string
		blocked             bool
	}{
		{"DataSyntaxBlocks", "a.yaml", "a:\n  b: 1\n c: 2\n", true},
		{"CodeSyntaxWarns", "a.go", "package a\nfunc f() { x := }\nvar y = 1\n", false},
		{"TruncatedCodeBlocks", "a.go", "package a\nfunc f() {\n", true},
		{"PlaceholderBlocks", "a.go", "package a\n\n// ... rest of code unchanged\n", true},
		{"ProseHintWarns", "a.md", "# T\n\n## Next\n", false},
		{"CleanPasses", "a.json", "{}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validate.Check(tt.path, []byte(tt.content), nil, false, marked)
			d := validate.Decide(r, validate.Policies{})
			if d.Blocked != tt.blocked {
				t.Fatalf("blocked = %v, want %v: %+v", d.Blocked, tt.blocked, r.Findings)
			}
			if d.Blocked && (len(d.Blocking) == 0 || !strings.Contains(d.Summary, "not written")) {
				t.Fatalf("blocked decision without reasons: %+v", d)
			}
			if !d.Blocked && len(r.Findings) > 0 && len(d.Warnings) == 0 {
				t.Fatalf("findings not reported as warnings: %+v", d)
			}
		})
	}
}

func TestPoliciesOverrideAndLayer(t *testing.T) {
	r := validate.Check("a.json", []byte("{"), nil, false, marked)
	if d := validate.Decide(r, validate.Policies{All: validate.PolicyWarn}); d.Blocked {
		t.Fatal("warn for all still blocked")
	}
	if d := validate.Decide(r, validate.Policies{All: validate.PolicyOff}); d.Blocked || len(d.Warnings) != 0 {
		t.Fatalf("off for all still reports: %+v", d)
	}
	daemon := validate.Policies{All: validate.PolicyWarn}
	session := validate.Policies{Categories: map[validate.Category]validate.Policy{validate.CategoryTruncation: validate.PolicyStrict}}
	eff := session.Over(daemon)
	if eff.For(validate.CategoryTruncation) != validate.PolicyStrict || eff.For(validate.CategoryDataSyntax) != validate.PolicyWarn {
		t.Fatalf("Over = %+v", eff)
	}
	if !validate.Decide(r, eff).Blocked {
		t.Fatal("session's strict truncation did not block a truncated file")
	}
	if got := (validate.Policies{All: validate.PolicyOff}).Over(daemon).For(validate.CategoryTruncation); got != validate.PolicyOff {
		t.Fatalf("session All did not win over the daemon: %s", got)
	}
}

func TestPoliciesValidate(t *testing.T) {
	if err := (validate.Policies{All: "lenient"}).Validate(); err == nil || !strings.Contains(err.Error(), "strict, warn or off") {
		t.Fatalf("err = %v", err)
	}
	if err := (validate.Policies{Categories: map[validate.Category]validate.Policy{"style": validate.PolicyWarn}}).Validate(); err == nil || !strings.Contains(err.Error(), "data_syntax") {
		t.Fatalf("err = %v", err)
	}
	if err := (validate.Policies{All: validate.PolicyStrict, Categories: map[validate.Category]validate.Policy{validate.CategoryEndMarker: validate.PolicyOff}}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestWireFormat pins the JSON field names the daemon sends.
func TestWireFormat(t *testing.T) {
	r := validate.Check("a.json", []byte("{\"a\": }"), nil, false, marked)
	d := validate.Decide(r, validate.Policies{})
	_, fixes, _ := validate.Repair("a.json", []byte("{}"), nil, false, validate.RepairOptions{})
	b, err := json.Marshal(map[string]any{"report": r, "decision": d, "repairs": fixes,
		"policies": validate.Policies{All: validate.PolicyWarn, Categories: map[validate.Category]validate.Policy{validate.CategoryTruncation: validate.PolicyStrict}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"file_type":"json"`, `"syntax_ok":false`, `"truncated":false`, `"findings":[`, `"code":"syntax_error"`,
		`"category":"data_syntax"`, `"severity":"error"`, `"line":1`, `"column":7`, `"blocked":true`, `"blocking":[`, `"summary":`,
		`"kind":"final_newline_added"`, `"all":"warn"`, `"categories":{"truncation":"strict"}`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}
	var back validate.Report
	if err := json.Unmarshal(mustJSON(t, r), &back); err != nil || back.Findings[0].Code != r.Findings[0].Code {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
