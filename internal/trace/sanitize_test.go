package trace_test

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/trace"
)

// checkJSONSafe fails unless b is valid JSON that PostgreSQL's jsonb
// accepts: valid UTF-8, no \u0000 escape, no lone surrogate escape, no NUL
// byte.
func checkJSONSafe(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("not valid JSON: %.200q", b)
	}
	if !utf8.Valid(b) {
		t.Fatalf("not valid UTF-8: %.200q", b)
	}
	if strings.IndexByte(string(b), 0) >= 0 {
		t.Fatalf("holds a NUL byte: %.200q", b)
	}
	// Walk the escapes: \u0000 and any \uD800-\uDFFF are what jsonb refuses
	// (encoding/json never pairs surrogates itself).
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++
		if b[i] != 'u' {
			continue
		}
		n, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
		if err != nil {
			t.Fatalf("bad escape at %d: %.200q", i, b)
		}
		if n == 0 || (n >= 0xd800 && n <= 0xdfff) {
			t.Fatalf("holds the escape \\u%04x: %.200q", n, b)
		}
		i += 4
	}
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("sanitized value does not encode: %v", err)
	}
	checkJSONSafe(t, b)
	return b
}

type withNaN struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
	Skip  string  `json:"-"`
	Empty string  `json:"empty,omitempty"`
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }

type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return []byte(`{"a":`), nil }

type stage string

func TestSanitize(t *testing.T) {
	deepMap := map[string]any{}
	cur := deepMap
	for range 100 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	self := map[string]any{"x": 1}
	self["a"], self["b"] = self, self
	lim := trace.Limits{MaxString: 64}
	tests := []struct {
		name string
		in   any
		want string // the encoded result, when it is fixed
	}{
		{"InvalidUTF8", "a\xffb\xc3", `"a�b�"`},
		{"Overlong", "\xc0\xaf", `"�"`},
		{"SurrogateAsUTF8", "x\xed\xa0\x80y", `"x�y"`},
		{"EscapeText", `\u0000 \ud800`, `"\\u0000 \\ud800"`},
		{"NUL", "a\x00b", `"a␀b"`},
		{"NULKey", map[string]any{"k\x00": 1}, `{"k␀":1}`},
		{"InvalidKey", map[string]any{"\xff": true}, `{"�":true}`},
		{"RawLoneSurrogate", json.RawMessage(`{"s":"\ud800","t":"\udfff\ud800x"}`), `{"s":"�","t":"��x"}`},
		{"RawNUL", json.RawMessage(`["\u0000"]`), `["␀"]`},
		{"RawInvalid", json.RawMessage(`{"a":`), `"{\"a\":"`},
		{"RawTrailing", json.RawMessage(`1 2`), `"1 2"`},
		{"NaN", math.NaN(), `"NaN"`},
		{"Inf", []any{math.Inf(1), math.Inf(-1), float32(math.Inf(1))}, `["+Inf","-Inf","+Inf"]`},
		{"Finite", []any{1.5, math.Copysign(0, -1), 3, int8(-2), uint64(math.MaxUint64)}, `[1.5,-0,3,-2,18446744073709551615]`},
		{"NumberOverflow", json.Number("1e400"), `"1e400"`},
		{"NumberUnderflow", json.Number("1e-400"), `"1e-400"`},
		{"NumberZero", json.Number("0.000e-999"), `0.000e-999`},
		{"NumberNotANumber", json.Number("NaN"), `"NaN"`},
		{"NumberInjection", json.Number(`1,"x":2`), `"1,\"x\":2"`},
		{"NumberOK", json.Number("-12.5e3"), `-12.5e3`},
		{"Bytes", []byte("text\x00\xff"), `"text␀�"`},
		{"Time", time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)), `"2026-01-02T02:04:05.000000006Z"`},
		{"Duration", 1500 * time.Millisecond, `"1.5s"`},
		{"Error", errors.New("bad \x00 thing"), `"bad ␀ thing"`},
		{"NamedString", stage("completed"), `"completed"`},
		{"StructWithNaN", withNaN{Name: "n\x00", Score: math.NaN(), Skip: "x"}, `{"name":"n␀","score":"NaN"}`},
		{"StructOK", withNaN{Name: "ok", Score: 2}, `{"name":"ok","score":2}`},
		{"PanickingMarshaler", panicky{}, ``},
		{"BrokenMarshaler", badJSON{}, `"{\"a\":"`},
		{"Channel", make(chan int), ``},
		{"Func", func() {}, ``},
		{"Complex", complex(1, 2), `"(1+2i)"`},
		{"NilPointer", (*withNaN)(nil), `null`},
		{"IntKeys", map[int]string{2: "b", 1: "a"}, `{"1":"a","2":"b"}`},
		{"Truncated", strings.Repeat("é", 100), `"` + strings.Repeat("é", 32) + `…[truncated: 200 bytes in all]"`},
		{"TruncatedMidRune", "a" + strings.Repeat("€", 40), `"a` + strings.Repeat("€", 21) + `…[truncated: 121 bytes in all]"`},
		{"Deep", deepMap, ``},
		{"Cycle", self, ``},
		{"DeepRaw", json.RawMessage(strings.Repeat("[", 20000) + strings.Repeat("]", 20000)), ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encode(t, trace.Sanitize(tt.in, lim))
			if tt.want != "" && string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSanitizeDepth(t *testing.T) {
	var v any = "leaf"
	for range 50 {
		v = []any{v}
	}
	got := string(encode(t, trace.Sanitize(v, trace.Limits{MaxDepth: 5})))
	if want := `[[[[["…[nesting deeper than 5 levels cut]"]]]]]`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestSanitizeItems(t *testing.T) {
	arr := make([]any, 10)
	obj := map[string]any{}
	for i := range 10 {
		arr[i] = i
		obj[string(rune('a'+i))] = i
	}
	got := string(encode(t, trace.Sanitize([]any{arr, obj}, trace.Limits{MaxItems: 3})))
	want := `[[0,1,2,"…[truncated: 10 items in all]"],{"a":0,"b":1,"c":2,"…truncated":"10 keys in all, 3 kept"}]`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCleanStringNeverSplitsACharacter(t *testing.T) {
	s := "aé€😀" // 1, 2, 3 and 4 bytes
	for max := 1; max <= len(s); max++ {
		got := trace.CleanString(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("max %d: %q is not valid UTF-8", max, got)
		}
		kept, _, _ := strings.Cut(got, "…[truncated")
		if !strings.HasPrefix(s, kept) || len(kept) > max {
			t.Fatalf("max %d: kept %q", max, kept)
		}
	}
	if got := trace.CleanString(s, len(s)); got != s {
		t.Fatalf("a string within the limit changed: %q", got)
	}
}

func TestSanitizeBigString(t *testing.T) {
	big := strings.Repeat("é", 5<<20) + "\x00\xff" // 10 MiB and change
	got := encode(t, trace.Sanitize(map[string]any{"big": big}, trace.Limits{}))
	if len(got) > trace.DefaultMaxString+200 {
		t.Fatalf("%d bytes encoded; want about %d", len(got), trace.DefaultMaxString)
	}
	if !strings.Contains(string(got), "…[truncated: 10485762 bytes in all]") {
		t.Fatalf("no truncation marker in %.100s…", got[len(got)-100:])
	}
}

// FuzzSanitize checks that whatever a client or the engine puts in an
// event, as a string or as raw JSON, the result is JSON PostgreSQL accepts.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "a\x00", "\xed\xa0\x80", `"\ud800"`, `{"a":[1,2,{"b":"\u0000"}]}`, "1e999", `[[[[`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lim := trace.Limits{MaxString: 16, MaxDepth: 4, MaxItems: 4}
		encode(t, trace.Sanitize(map[string]any{s: s, "raw": json.RawMessage(s), "n": json.Number(s)}, lim))
	})
}
