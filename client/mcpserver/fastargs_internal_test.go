package mcpserver

import (
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/orion-agent/orion/protocol"
)

// flatArgs has a field of each kind decodeFlat sets, as the tools' own
// argument structs do.
type flatArgs struct {
	TargetFile string             `json:"target_file"`
	Operation  protocol.Operation `json:"operation"`
	Content    *string            `json:"content"`
	Seq        uint64             `json:"seq"`
	Lines      int64              `json:"expected_lines"`
	Small      int8               `json:"small"`
	DryRun     bool               `json:"dry_run,omitempty"`
}

// general is what decodeArgs did before decodeFlat: the arguments by the
// general decoder alone.
func general(raw []byte, v any) error {
	return jsonv2.Unmarshal(raw, v, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// decodeFlat reads the arguments it takes exactly as the general decoder
// does, and takes the shape every MCP host sends for write_file.
func TestDecodeFlat(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		fast      bool
	}{
		{"WriteFile", `{"target_file":"a.txt","operation":"overwrite","content":"x \"y\" \\ z\n\u00e9\ud83d\ude00"}`, true},
		{"Spaces", " {\n \"target_file\" : \"a\" ,\t\"seq\": 12 , \"dry_run\":true}\n", true},
		{"Empty", `{}`, true},
		{"Numbers", `{"seq":18446744073709551615,"expected_lines":-3,"small":127}`, true},
		{"RepeatedLastWins", `{"content":"a","content":"b"}`, true},
		{"UnknownString", `{"other":"ignored","target_file":"a"}`, true},
		{"NameCaseDiffers", `{"Target_File":"a"}`, true},
		{"EmptyContent", `{"content":""}`, true},
		{"InvalidUTF8", "{\"content\":\"a\xffb\"}", false},
		{"LoneSurrogate", `{"content":"\ud800"}`, false},
		{"EscapedName", `{"target\u005ffile":"a"}`, false},
		{"Null", `{"content":null}`, false},
		{"Nested", `{"target_file":"a","patch_spec":{"type":"x"}}`, false},
		{"UnknownNumber", `{"other":1}`, false},
		{"Fraction", `{"seq":1.0}`, false},
		{"Exponent", `{"seq":1e3}`, false},
		{"LeadingZero", `{"seq":01}`, false},
		{"Negative", `{"seq":-1}`, false},
		{"Overflow", `{"small":128}`, false},
		{"StringForNumber", `{"seq":"1"}`, false},
		{"NumberForString", `{"target_file":1}`, false},
		{"Trailing", `{"target_file":"a"} x`, false},
		{"NotObject", `["a"]`, false},
		{"Unclosed", `{"target_file":"a"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want flatArgs
			fast := decodeFlat([]byte(tc.raw), &got)
			if fast != tc.fast {
				t.Fatalf("decodeFlat(%s) = %v, want %v", tc.raw, fast, tc.fast)
			}
			if !fast {
				if !reflect.DeepEqual(got, flatArgs{}) {
					t.Fatalf("decodeFlat(%s) refused but left %+v", tc.raw, got)
				}
				return
			}
			if err := general([]byte(tc.raw), &want); err != nil {
				t.Fatalf("decodeFlat took %s, the general decoder refuses it: %v", tc.raw, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeFlat(%s) = %+v, the general decoder %+v", tc.raw, got, want)
			}
		})
	}
}

// Types with a field decodeFlat does not set go to the general decoder
// whole.
func TestDecodeFlatTypes(t *testing.T) {
	raw := []byte(`{"a":"x"}`)
	for name, v := range map[string]any{
		"Map":    &map[string]any{},
		"Nested": &struct{ A protocol.PatchSpec }{},
		"StringTag": &struct {
			A int `json:"a,string"`
		}{},
		"Float":  &struct{ A float64 }{},
		"NotPtr": struct{ A string }{},
	} {
		if decodeFlat(raw, v) {
			t.Errorf("%s: decodeFlat took a type it does not decode", name)
		}
	}
}

// FuzzDecodeFlat: whatever decodeFlat takes, the general decoder reads to
// the same struct.
func FuzzDecodeFlat(f *testing.F) {
	for _, s := range []string{`{"target_file":"a","content":"b\n"}`, `{"seq":1,"dry_run":false}`, `{"content":"a","content":null}`,
		`{"small":-128}`, "{\"content\":\"\xff\"}", `{"operation":"create","x":"y"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want flatArgs
		if !decodeFlat(raw, &got) {
			return
		}
		if err := general(raw, &want); err != nil {
			t.Fatalf("decodeFlat took %q, the general decoder refuses it: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeFlat(%q) = %+v, the general decoder %+v", raw, got, want)
		}
	})
}

func BenchmarkDecodeArgs(b *testing.B) {
	content := strings.Repeat("const value = compute(alpha, beta) + 42; // a line of code\n", 64<<10/60)
	q, _ := jsontext.AppendQuote(nil, content)
	raw := []byte(`{"target_file":"/w/a.txt","operation":"overwrite","content":` + string(q) + `}`)
	b.Run("flat", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var a flatArgs
			if !decodeFlat(raw, &a) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var a flatArgs
			if err := general(raw, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
