package proxy

import (
	"bytes"
	"encoding/json"
	"testing"
)

// splitJSON cuts a request into members without decoding it: it must agree
// with encoding/json on every valid object and array.
func FuzzSplitJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, ` { "a" : 1 , "b":[1,{"c":"]}"}], "d\"}":"x\\"} ]" }`,
		`[{"role":"system","content":"a,b"},{"role":"user","content":[{"type":"text","text":"{["}]}, null, true, -1.5e3]`,
		`{"messages":[],"stream":false,"model":"m\u00e9"}`, `{"a":{"b":{"c":[[[]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.TrimSpace(raw)
		if !json.Valid(raw) || len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
			return
		}
		keys, vals := splitJSON(raw)
		compact := func(b []byte) string {
			var out bytes.Buffer
			if err := json.Compact(&out, b); err != nil {
				t.Fatalf("a value %q is not valid JSON: %v", b, err)
			}
			return out.String()
		}
		if raw[0] == '[' {
			var want []json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if len(vals) != len(want) || keys != nil {
				t.Fatalf("%q: %d elements, want %d", raw, len(vals), len(want))
			}
			for i := range want {
				if compact(vals[i]) != compact(want[i]) {
					t.Fatalf("%q: element %d is %q, want %q", raw, i, vals[i], want[i])
				}
			}
			return
		}
		want := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]json.RawMessage{}
		for i, k := range keys {
			var name string
			if err := json.Unmarshal(k, &name); err != nil {
				t.Fatalf("%q: key %q: %v", raw, k, err)
			}
			got[name] = vals[i]
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, want %d", raw, len(got), len(want))
		}
		for k, v := range want {
			if compact(got[k]) != compact(v) {
				t.Fatalf("%q: member %q is %q, want %q", raw, k, got[k], v)
			}
		}
	})
}
