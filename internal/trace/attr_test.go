package trace

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/protocol"
)

// Typed fields are stored byte for byte as the same fields given in a map:
// a reader of the trace cannot tell which path an event took.
func TestAttrsEncodeAsFields(t *testing.T) {
	long := strings.Repeat("é", DefaultMaxString)
	strs := []string{"", "plain", `quote " and \ back`, "ctl \x00\x01\b\f\n\r\t\x1f end", "bad \xff utf8",
		"line sep \u2028 para \u2029", "<html> & 'x'", long, "emoji 😀"}
	floats := []float64{0, 1, -1.5, 1e-7, 1.5e-9, 1e21, 123456789.125, math.NaN(), math.Inf(1), math.Inf(-1), 0.000001}
	type warning struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	cases := map[string][]Attr{
		"mixed": {String("target", "/a/b.txt"), String("operation", "create"), Bool("write", true),
			Int("bytes", 1024), Uint("seq", math.MaxUint64), Int("lines", -3), Bool("merged", false)},
		"any": {Any("warnings", []warning{{"w", "bad \x00 message"}}), Any("nil", nil), Any("empty", []warning{}),
			Any("none", []warning(nil)), Any("map", map[string]any{"b": 1, "a": "x"}), Any("dur", 3*time.Second)},
		"duplicate keys keep the last": {Int("k", 1), String("a", "x"), Int("k", 2)},
		"keys cleaned":                 {Int("bad \xff key", 1), Int(strings.Repeat("k", 300), 2)},
	}
	for i, s := range strs {
		cases["string "+string(rune('a'+i))] = []Attr{String("s", s), String(s, "key")}
	}
	for i, f := range floats {
		cases["float "+string(rune('a'+i))] = []Attr{Float("f", f), Millis("ms", time.Duration(i)*1234567)}
	}
	for _, lim := range []Limits{{}, {MaxString: 10, MaxKey: 4, MaxFields: 200, MaxValues: 3, MaxItems: 2}} {
		for name, attrs := range cases {
			want := encodeFields(fieldsOf(nil, attrs), lim)
			got := encodeAttrs(attrs, lim)
			if !bytes.Equal(got, want) {
				t.Errorf("%s (limits %+v):\n got %s\nwant %s", name, lim, got, want)
			}
		}
	}
}

// The event around the fields is encoded as encoding/json encodes it.
func TestEventEncodedAsJSON(t *testing.T) {
	tr := New(Options{})
	defer tr.Close()
	for _, ev := range []Event{
		{Type: protocol.TraceStage, SessionID: "s1", Attrs: []Attr{String("stage", "completed")}},
		{Type: protocol.TraceRequest, Method: "session.write \x00\"", Fields: map[string]any{"duration_ms": 1.5}},
		{Type: "", SessionID: "bad \xff"},
		{Type: protocol.TraceWrite, Fields: map[string]any{"a": 1}, Attrs: []Attr{Int("a", 2), Int("b", 3)}},
	} {
		for _, at := range []time.Time{time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), {}} {
			e := tr.encode(ev, eventKey(at, 7))
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(e.Event); err != nil {
				t.Fatal(err)
			}
			if got, want := string(e.JSON), strings.TrimSuffix(buf.String(), "\n"); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		}
	}
	e := tr.encode(Event{Type: protocol.TraceWrite, Fields: map[string]any{"a": 1}, Attrs: []Attr{Int("a", 2)}}, eventKey(time.Time{}, 1))
	if got, want := string(e.Event.Fields), `{"a":2}`; got != want {
		t.Errorf("an Attr and a field of one key: got %s, want %s", got, want)
	}
}
