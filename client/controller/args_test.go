package controller

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var updateArgs = flag.Bool("update-args", false, "rewrite the expected results in ../testdata/args/cases.json")

// argsCase is one entry of the argument cases the Go and Node suites share:
// the arguments a model streamed and what the controller makes of them.
type argsCase struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Want      any    `json:"want"`
}

// argsOutcome is what parseBeginArgs decided, in the shared JSON shape: the
// tool result of a failure, or the parameters and the ignored members.
func argsOutcome(raw string) any {
	a := parseBeginArgs(raw)
	var v any
	if a.failed != nil {
		v = json.RawMessage(toJSON(a.failed))
	} else {
		ignored := a.ignored
		if ignored == nil {
			ignored = []string{}
		}
		params := map[string]any{
			"intent": a.params.Intent, "target_file": a.params.TargetFile, "operation": string(a.params.Operation),
		}
		if a.params.PatchSpec != nil {
			params["patch_spec"] = a.params.PatchSpec
		}
		v = map[string]any{"params": params, "ignored": ignored}
	}
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func TestSharedArgumentCases(t *testing.T) {
	const path = "../testdata/args/cases.json"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []argsCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		got := argsOutcome(c.Arguments)
		if *updateArgs {
			cases[i].Want = got
			continue
		}
		if !reflect.DeepEqual(got, c.Want) {
			gb, _ := json.MarshalIndent(got, "", "  ")
			t.Errorf("%s: %q:\n%s", c.Name, c.Arguments, gb)
		}
	}
	if *updateArgs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cases); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestArgsNeverEmpty: whatever arrives, a failure names an error and tells
// the model what to resend; it never degrades to "{}".
func TestArgsNeverEmpty(t *testing.T) {
	full := `{"intent":"Write it","target_file":"a.md","operation":"create"}`
	for i := range len(full) {
		a := parseBeginArgs(full[:i])
		if a.failed == nil {
			t.Fatalf("prefix %q was accepted", full[:i])
		}
		if a.failed.Error == "" || a.failed.Resend == nil || !strings.Contains(a.failed.Message, "Call WritePlanTool_begin again") {
			t.Fatalf("prefix %q: %+v", full[:i], a.failed)
		}
	}
	if a := parseBeginArgs(full); a.failed != nil || a.params.TargetFile != "a.md" {
		t.Fatalf("whole arguments: %+v", a)
	}
}

func FuzzScanArgsMatchesEncodingJSON(f *testing.F) {
	f.Add(`{"intent":"a","target_file":"b","operation":"create"}`)
	f.Add(`{"x":[1,{"y":"}"}],"z":null,"w":-1.5e3}`)
	f.Add(`{"s":"\ud83d\ude80\u00e9\n"}`)
	f.Add(`{"operation":"patch","patch_spec":{"type":"replace_all","pattern":"a\"}","count":"all"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		sc := scanArgs(s)
		var m map[string]any
		err := json.Unmarshal([]byte(s), &m)
		// Whatever encoding/json accepts as an object, the scanner accepts
		// with the same string members.
		if err == nil && m != nil {
			if sc.status != argsOK {
				t.Fatalf("%q: json accepts, scanner says %s at %d", s, sc.status, sc.pos)
			}
			for k, v := range m {
				if str, ok := v.(string); ok && sc.fields[k].str != str {
					t.Fatalf("%q: member %q is %q, scanner %q", s, k, str, sc.fields[k].str)
				}
				// An object's raw text (what patch_spec passes on) is the
				// same value.
				if obj, ok := v.(map[string]any); ok {
					var raw any
					if err := json.Unmarshal([]byte(sc.fields[k].raw), &raw); err != nil || !reflect.DeepEqual(raw, any(obj)) {
						t.Fatalf("%q: member %q is %v, scanner's raw text %q", s, k, obj, sc.fields[k].raw)
					}
				}
			}
		}
	})
}
