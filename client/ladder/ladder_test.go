package ladder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rivo/uniseg"

	"github.com/orion-agent/orion/protocol"
)

var update = flag.Bool("update", false, "rewrite golden files")

func readEvents(t *testing.T, path string) []protocol.TraceEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []protocol.TraceEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev protocol.TraceEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		events = append(events, ev)
	}
	return events
}

// TestLadder draws the ladders of recorded sessions (exported from a real
// oriond with orionctl trace --export, and one made by hand with odd
// content) and compares them with testdata/*.ladder.
func TestLadder(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.jsonl")
	if len(inputs) < 3 {
		t.Fatalf("inputs %v", inputs)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
		t.Run(name, func(t *testing.T) {
			events := readEvents(t, in)
			var out bytes.Buffer
			if err := Build(events[0].SessionID, events).WriteText(&out, Width); err != nil {
				t.Fatal(err)
			}
			// The box holds: every line exactly as wide as the ladder.
			for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if w := uniseg.StringWidth(line); w != Width {
					t.Errorf("line %d is %d columns, want %d: %q", i+1, w, Width, line)
				}
				if strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("line %d holds a control character: %q", i+1, line)
				}
			}
			golden := strings.TrimSuffix(in, ".jsonl") + ".ladder"
			if *update {
				os.WriteFile(golden, out.Bytes(), 0o644)
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if out.String() != string(want) {
				t.Fatalf("ladder differs from %s (go test -update rewrites it):\n%s", golden, out.String())
			}
		})
	}
}

func TestLadderSteps(t *testing.T) {
	events := readEvents(t, "testdata/completed.jsonl")
	var titles []string
	for _, r := range buildRungs(events) {
		titles = append(titles, r.Title+" "+r.Status.Icon())
	}
	if got, want := strings.Join(titles, ", "), "BEGIN ✅, APPEND ✅, FINALIZE ✅"; got != want {
		t.Fatalf("steps %s, want %s", got, want)
	}
	rungs := buildRungs(readEvents(t, "testdata/odd.jsonl"))
	var got []string
	for _, r := range rungs {
		got = append(got, r.Title+" "+r.Status.Icon())
	}
	want := "BEGIN ✅, APPEND ✅, TARGET CHANGED ON DISK ❗, FINALIZE ❌, FINALIZE ❌, ERROR ❌, CUSTOM.THING ❓, EXPIRED ❗"
	if strings.Join(got, ", ") != want {
		t.Fatalf("steps %s\nwant  %s", strings.Join(got, ", "), want)
	}
}

// TestAppendRunFolds: the APPEND rung of folded append events (oriond
// records a session's acknowledged appends as one event with appends,
// first_seq, max_duration_ms and end_marker_seq) says what the rung of one
// event per append said, and fields no daemon writes are read safely.
func TestAppendRunFolds(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
		want   string
	}{
		{"Single", []string{`{"seq":1,"bytes":8,"duration_ms":1.5,"end_marker_seen":true}`},
			"Method: session.append|Chunks: seq 1|Received: 8 bytes|End marker: seen at seq 1|Took: 1.5 ms"},
		{"Folded", []string{`{"appends":3,"first_seq":1,"seq":3,"bytes":28,"duration_ms":3.229,"max_duration_ms":1.257,"end_marker_seen":true,"end_marker_seq":2}`},
			"Method: session.append|Chunks: seq 1–3 (3 requests)|Received: 28 bytes|End marker: seen at seq 2|Took: 3.229 ms in all, the slowest 1.257 ms"},
		// Two folds and a single append in a row are one run.
		{"FoldsInARow", []string{
			`{"appends":2,"first_seq":1,"seq":2,"bytes":20,"duration_ms":2,"max_duration_ms":1.5,"end_marker_seen":false}`,
			`{"seq":3,"bytes":30,"duration_ms":2,"end_marker_seen":false}`,
			`{"appends":4,"first_seq":4,"seq":7,"bytes":70,"duration_ms":4,"max_duration_ms":1,"end_marker_seen":true,"end_marker_seq":6}`},
			"Method: session.append|Chunks: seq 1–7 (7 requests)|Received: 70 bytes|End marker: seen at seq 6|Took: 8 ms in all, the slowest 2 ms"},
		{"OddCounts", []string{
			`{"appends":-5,"seq":1,"duration_ms":1}`,
			`{"appends":1e300,"first_seq":"x","seq":2,"max_duration_ms":"slow","duration_ms":1}`,
			`{"appends":0.5,"seq":3}`},
			"Method: session.append|Chunks: seq 1–3 (1099511627778 requests)|End marker: not yet|Took: 2 ms in all, the slowest 1 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a appendRun
			for _, raw := range tt.fields {
				f := DecodeFields(json.RawMessage(raw))
				took, hasTook := fieldFloat(f, "duration_ms")
				a.add(f, took, hasTook)
			}
			if got := strings.Join(a.lines(), "|"); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	for _, s := range []string{
		"    short",
		"    Target: /home/me/一个很长的目录名/with spaces/and-a-very-long-file-name-that-does-not-fit.md",
		"    " + strings.Repeat("x", 200),
		"    a " + strings.Repeat("🎉", 50),
	} {
		lines := wrap(s, 40, "    ")
		var kept strings.Builder
		for _, l := range lines {
			if w := uniseg.StringWidth(l); w > 40 {
				t.Fatalf("%q: line %q is %d columns", s, l, w)
			}
			kept.WriteString(strings.ReplaceAll(l, " ", ""))
		}
		if kept.String() != strings.ReplaceAll(s, " ", "") {
			t.Fatalf("%q wrapped lost text: %q", s, lines)
		}
	}
}

// A path too long for a line breaks after one of its slashes, never
// inside a name, wherever the temp directory that holds it is.
func TestWrapKeepsNamesWhole(t *testing.T) {
	names := []string{"tmp", "TestTraceOfARealSession12345", "001", "a-directory-name", "traced.md"}
	for depth := 0; depth < 6; depth++ {
		parts := append(slices.Repeat([]string{"deeper-dir"}, depth), names...)
		path := "/" + strings.Join(parts, "/")
		s := "    Wrote: " + path + ", 30 bytes, 3 lines"
		lines := wrap(s, 40, "    ")
		joined := ""
		for _, l := range lines {
			joined += strings.TrimLeft(l, " ") + "\n"
		}
		for _, name := range append(parts, "Wrote:", "bytes,") {
			if !strings.Contains(joined, name) {
				t.Errorf("depth %d: %q was cut across lines:\n%s", depth, name, strings.Join(lines, "\n"))
			}
		}
	}
}

// Every string the trace holds that a model or a client chose (session id,
// method, event type, target, field names and values) reaches the
// terminal inert: no ESC, no C0 or C1 control, no bidi control; the JSON
// model keeps them exact.
func TestTextIsTerminalSafe(t *testing.T) {
	hostile := "\x1b]52;c;cGF3bmVk\a\x1b[2J\u202etxt.exe\u0085\u200b"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(typ, method, fields string) protocol.TraceEvent {
		at = at.Add(time.Second)
		e := protocol.TraceEvent{Time: at, SessionID: "s" + hostile, Method: method, Fields: json.RawMessage(fields)}
		// Through JSON, as a client receives it (and whatever Go type
		// the type field has).
		tq, _ := json.Marshal(typ)
		if err := json.Unmarshal([]byte(`{"type":`+string(tq)+`}`), &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	q, _ := json.Marshal(hostile)
	events := []protocol.TraceEvent{
		ev("request", "session.begin", `{"duration_ms":1}`),
		ev("session.stage", "", `{"stage":"awaiting_content","target":`+string(q)+`,"operation":`+string(q)+`,"bytes":0,"lines":0}`),
		ev("request", "x."+hostile, `{"error_code":-1,"error":`+string(q)+`}`),
		ev("custom."+hostile, "", `{`+string(q)+`:`+string(q)+`,"list":[`+string(q)+`]}`),
		ev("session.write", "", `{"target":`+string(q)+`,"bytes":1,"lines":1,"warnings":[{"code":`+string(q)+`,"message":`+string(q)+`}]}`),
	}
	l := Build(events[0].SessionID, events)
	var out bytes.Buffer
	if err := l.WriteText(&out, Width); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if strings.ContainsFunc(line, func(r rune) bool {
			return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u202e' || r == '\u200b'
		}) {
			t.Errorf("line %d is not inert: %q", i+1, line)
		}
		if w := uniseg.StringWidth(line); w != Width {
			t.Errorf("line %d is %d columns: %q", i+1, w, line)
		}
	}
	if !strings.Contains(out.String(), `\x1b]52;c;cGF3bmVk\x07\x1b[2J\u202etxt.exe\u0085\u200b`) {
		t.Errorf("the escaped target is missing:\n%s", out.String())
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Ladder
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Target != hostile+" ("+hostile+")" || back.Rungs[2].Title != "REQUEST X."+strings.ToUpper(hostile) {
		t.Errorf("the JSON model changed the strings: %q, %q", back.Target, back.Rungs[2].Title)
	}
}

// The JSON model, for clients that draw the ladder themselves: statuses by
// name, the details in order, the folded appends' count.
func TestJSON(t *testing.T) {
	events := readEvents(t, "testdata/folded.jsonl")
	b, err := json.Marshal(Build(events[0].SessionID, events))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		SessionID string `json:"session_id"`
		Stage     string `json:"stage"`
		Events    int    `json:"events"`
		Rungs     []struct {
			Title    string   `json:"title"`
			Status   string   `json:"status"`
			Requests int      `json:"requests"`
			Details  []string `json:"details"`
			Stages   []string `json:"stages"`
		} `json:"rungs"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.SessionID != events[0].SessionID || got.Stage != "completed, 28 bytes, 4 lines" || got.Events != len(events) || len(got.Rungs) != 3 {
		t.Fatalf("%s", b)
	}
	a := got.Rungs[1]
	if a.Title != "APPEND" || a.Status != "ok" || a.Requests != 3 || a.Details[1] != "Chunks: seq 1–3 (3 requests)" ||
		strings.Join(a.Stages, ",") != "streaming" {
		t.Fatalf("the append rung: %+v", a)
	}
	var s Status
	if err := s.UnmarshalText([]byte("attention")); err != nil || s != StatusAttention {
		t.Fatalf("status: %v %v", s, err)
	}
	if Build("x", nil) != nil {
		t.Fatal("a ladder of no events")
	}
}
