// Package ladder turns one session's trace events into a ladder: the steps
// of a tool call, top to bottom, like a sequence diagram. Each request is a
// rung, with the stage changes, writes and conflicts that happened while it
// ran; consecutive successful appends are one rung; events no request
// caused (idle and auto-finalize timers, the watcher, recovery) are rungs
// of their own.
//
// Build makes the model, a Ladder; WriteText draws it for a terminal
// (`orionctl trace SESSION`), and a Ladder marshals to JSON for other
// clients (the local page, the editor extension), which draw it their own
// way. The model's strings are the trace's own, raw: a model or a client
// chose many of them (the target, the intent, error texts, field names),
// so every renderer escapes them for its medium; WriteText does it for the
// terminal with termsafe.
package ladder

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/textfmt"
	"github.com/orion-agent/orion/protocol"
)

// Status of a rung, worst last.
type Status int

// The statuses.
const (
	StatusOK Status = iota
	StatusUnknown
	StatusAttention
	StatusFailed
)

var statusNames = [...]string{"ok", "unknown", "attention", "failed"}

// String is the status's name: ok, unknown, attention or failed.
func (s Status) String() string { return statusNames[s] }

// MarshalText writes the status's name.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a status's name.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if n == string(b) {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("unknown rung status %q", b)
}

// Icon is the status as the text ladder shows it.
func (s Status) Icon() string {
	return [...]string{"✅", "❓", "❗", "❌"}[s]
}

// Ladder is one session's trace as rungs.
type Ladder struct {
	SessionID string    `json:"session_id"`
	Started   time.Time `json:"started"`
	// Last is the time of the last event.
	Last time.Time `json:"last"`
	// Target is the session's target with its operation, "path (overwrite)",
	// from its first stage event that names one.
	Target string `json:"target,omitempty"`
	// Stage is where the session ended up, with its bytes and lines when
	// the last stage event gave them: "completed, 200 bytes, 3 lines".
	Stage string `json:"stage,omitempty"`
	// Events is the number of trace events drawn.
	Events int    `json:"events"`
	Rungs  []Rung `json:"rungs"`
}

// Rung is one step.
type Rung struct {
	// Title says what the step was: BEGIN, APPEND, FINALIZE, EXPIRED, ...
	Title  string    `json:"title"`
	Status Status    `json:"status"`
	At     time.Time `json:"at"`
	// Method is the request's method, for a request's rung.
	Method string `json:"method,omitempty"`
	// Requests is how many requests the rung stands for: more than one
	// for a run of appends.
	Requests int `json:"requests,omitempty"`
	// Details are the rung's lines, "Key: value", in order.
	Details []string `json:"details"`
	// Stages are the stages the session went through during the step.
	Stages []string `json:"stages,omitempty"`
}

// rung is a Rung being built.
type rung struct {
	Rung
	content string // bytes and lines after the rung's last stage change
	// appends summarises a run of successful session.append requests.
	appends *appendRun
}

type appendRun struct {
	n                  int
	first, last        string // seq
	bytes              string
	marker             string // seq at which the end marker was seen
	took, slowest      float64
	hasTook, hasMarker bool
}

func (r *rung) worsen(s Status) {
	if s > r.Status {
		r.Status = s
	}
}

func (r *rung) add(format string, args ...any) {
	r.Details = append(r.Details, fmt.Sprintf(format, args...))
}

var methodTitles = map[string]string{
	protocol.MethodSessionBegin:    "BEGIN",
	protocol.MethodSessionAppend:   "APPEND",
	protocol.MethodSessionFinalize: "FINALIZE",
	protocol.MethodSessionAbort:    "ABORT",
	protocol.MethodSessionResume:   "RESUME",
	protocol.MethodSessionContinue: "CONTINUE",
	protocol.MethodSessionGet:      "GET",
}

// Build makes the ladder of session's events, oldest first; nil when there
// are none.
func Build(session string, events []protocol.TraceEvent) *Ladder {
	if len(events) == 0 {
		return nil
	}
	l := &Ladder{SessionID: session, Started: events[0].Time, Last: events[len(events)-1].Time, Events: len(events)}
	for _, ev := range events {
		if string(ev.Type) != string(protocol.TraceStage) {
			continue
		}
		f := DecodeFields(ev.Fields)
		if t, ok := fieldString(f, "target"); ok && l.Target == "" {
			op, _ := fieldString(f, "operation")
			l.Target = t + " (" + op + ")"
		}
		if s, ok := fieldString(f, "stage"); ok {
			l.Stage = s
			b, hasB := fieldString(f, "bytes")
			n, _ := fieldString(f, "lines")
			if hasB {
				l.Stage += ", " + count(b, "byte", "bytes") + ", " + count(n, "line", "lines")
			}
		}
	}
	for _, r := range buildRungs(events) {
		l.Rungs = append(l.Rungs, r.finish())
	}
	return l
}

// finish puts the append run's summary first and the stages last among
// the details.
func (r *rung) finish() Rung {
	out := r.Rung
	out.Details = append([]string(nil), r.Details...)
	if r.appends != nil {
		out.Requests = r.appends.n
		out.Details = append(r.appends.lines(), out.Details...)
	}
	if len(r.Stages) > 0 {
		st := "Stage: " + strings.Join(r.Stages, " → ")
		// An append run says what it received; the stage's count is
		// from its first chunk.
		if r.content != "" && r.appends == nil {
			st += " (" + r.content + ")"
		}
		out.Details = append(out.Details, st)
	}
	if out.Details == nil {
		out.Details = []string{}
	}
	return out
}

// count is a count as a trace field gave it (a number, usually), with the
// noun's form.
func count(n, one, many string) string {
	if n == "1" {
		return n + " " + one
	}
	return n + " " + many
}

// DecodeFields reads a trace event's fields, numbers kept as written; a
// malformed or empty object gives an empty map.
func DecodeFields(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if len(raw) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		dec.Decode(&m)
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compact renders a field value: strings bare, the rest as compact JSON.
func compact(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fieldString is a field as text, and whether it was there.
func fieldString(f map[string]any, k string) (string, bool) {
	v, ok := f[k]
	if !ok || v == nil {
		return "", false
	}
	return compact(v), true
}

func fieldFloat(f map[string]any, k string) (float64, bool) {
	n, ok := f[k].(json.Number)
	if !ok {
		return 0, false
	}
	x, err := n.Float64()
	return x, err == nil
}

func ms(x float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64) + " ms"
}

func buildRungs(events []protocol.TraceEvent) []*rung {
	var rungs []*rung
	var open *rung
	var openEnd time.Time
	for _, ev := range events {
		f := DecodeFields(ev.Fields)
		if string(ev.Type) == string(protocol.TraceRequest) {
			took, hasTook := fieldFloat(f, "duration_ms")
			// Events of the request carry times up to its end; allow a
			// millisecond for clocks read at slightly different moments.
			end := ev.Time.Add(time.Duration(took*float64(time.Millisecond)) + time.Millisecond)
			_, failed := f["error_code"]
			if ev.Method == protocol.MethodSessionAppend && !failed && len(rungs) > 0 && rungs[len(rungs)-1].appends != nil &&
				rungs[len(rungs)-1].Status == StatusOK {
				rungs[len(rungs)-1].appends.add(f, took, hasTook)
				open, openEnd = rungs[len(rungs)-1], end
				continue
			}
			r := requestRung(ev, f, took, hasTook)
			rungs = append(rungs, r)
			open, openEnd = r, end
			continue
		}
		if open != nil && !ev.Time.After(openEnd) {
			open.absorb(ev, f)
			continue
		}
		open = nil
		r := &rung{Rung: Rung{At: ev.Time}}
		r.Title = eventTitle(ev, f)
		r.absorb(ev, f)
		rungs = append(rungs, r)
	}
	return rungs
}

func requestRung(ev protocol.TraceEvent, f map[string]any, took float64, hasTook bool) *rung {
	r := &rung{Rung: Rung{At: ev.Time, Method: ev.Method}}
	r.Title = methodTitles[ev.Method]
	if r.Title == "" {
		r.Title = "REQUEST " + strings.ToUpper(ev.Method)
	}
	if code, failed := fieldString(f, "error_code"); failed {
		msg, _ := fieldString(f, "error")
		r.Status = StatusFailed
		r.add("Method: %s", ev.Method+tookSuffix(took, hasTook))
		r.add("Error: %s %s", code, msg)
	} else if ev.Method == protocol.MethodSessionAppend {
		r.appends = &appendRun{}
		r.appends.add(f, took, hasTook)
	} else {
		r.add("Method: %s", ev.Method+tookSuffix(took, hasTook))
	}
	switch {
	case r.appends != nil:
	case r.Status == StatusFailed:
		// A refused append acknowledged nothing: its seq and bytes are
		// zero values, not news.
		genericFields(r, f, "duration_ms", "error_code", "error", "seq", "bytes", "end_marker_seen")
	default:
		genericFields(r, f, "duration_ms", "error_code", "error")
	}
	return r
}

func tookSuffix(took float64, has bool) string {
	if !has {
		return ""
	}
	return ", " + ms(took)
}

// add counts one request event of session.append into the run. oriond
// folds a session's acknowledged appends into one event (fields appends,
// first_seq, max_duration_ms, end_marker_seq besides those of a single
// append, where seq is the last and duration_ms the sum); an event without
// them is one append, as older daemons recorded every one.
func (a *appendRun) add(f map[string]any, took float64, hasTook bool) {
	n := 1
	if x, ok := fieldFloat(f, "appends"); ok && x >= 1 {
		// A count no daemon wrote (fractional, past int's range) still
		// counts for at least one, and never overflows.
		n = int(min(x, 1<<40))
	}
	a.n += n
	seq, _ := fieldString(f, "seq")
	first := seq
	if s, ok := fieldString(f, "first_seq"); ok {
		first = s
	}
	if a.n == n {
		a.first = first
	}
	a.last = seq
	if b, ok := fieldString(f, "bytes"); ok {
		a.bytes = b
	}
	if seen, _ := f["end_marker_seen"].(bool); seen && !a.hasMarker {
		a.marker, a.hasMarker = seq, true
		if s, ok := fieldString(f, "end_marker_seq"); ok {
			a.marker = s
		}
	}
	if hasTook {
		slowest := took
		if x, ok := fieldFloat(f, "max_duration_ms"); ok {
			slowest = x
		}
		a.took += took
		a.slowest = max(a.slowest, slowest)
		a.hasTook = true
	}
}

func (a *appendRun) lines() []string {
	var out []string
	chunks := "seq " + a.first
	if a.n > 1 {
		chunks = fmt.Sprintf("seq %s–%s (%s)", a.first, a.last, textfmt.Count(a.n, "request", "requests"))
	}
	out = append(out, "Method: session.append", "Chunks: "+chunks)
	if a.bytes != "" {
		out = append(out, "Received: "+count(a.bytes, "byte", "bytes"))
	}
	if a.hasMarker {
		out = append(out, "End marker: seen at seq "+a.marker)
	} else {
		out = append(out, "End marker: not yet")
	}
	if a.hasTook {
		t := ms(roundMS(a.took))
		if a.n > 1 {
			t += " in all, the slowest " + ms(a.slowest)
		}
		out = append(out, "Took: "+t)
	}
	return out
}

func roundMS(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func eventTitle(ev protocol.TraceEvent, f map[string]any) string {
	switch string(ev.Type) {
	case string(protocol.TraceStage):
		stage, _ := fieldString(f, "stage")
		switch {
		case f["recovered"] != nil:
			return "RECOVERED AFTER A RESTART"
		case stage == string(protocol.StageTruncated):
			return "TRUNCATED (NO END MARKER)"
		case stage == string(protocol.StageExpired):
			return "EXPIRED"
		}
		return "STAGE " + strings.ToUpper(stage)
	case string(protocol.TraceWrite):
		return "WRITE"
	case string(protocol.TraceConflict):
		return "TARGET CHANGED ON DISK"
	case string(protocol.TraceTruncated):
		return "TRUNCATED"
	case string(protocol.TraceValidation):
		return "VALIDATION"
	case string(protocol.TraceError):
		return "ERROR"
	}
	return strings.ToUpper(string(ev.Type))
}

// absorb adds what ev says to the rung.
func (r *rung) absorb(ev protocol.TraceEvent, f map[string]any) {
	switch string(ev.Type) {
	case string(protocol.TraceStage):
		stage, _ := fieldString(f, "stage")
		r.Stages = append(r.Stages, stage)
		switch protocol.Stage(stage) {
		case protocol.StageTruncated, protocol.StageNeedsCorrections, protocol.StageExpired, protocol.StageAborted:
			r.worsen(StatusAttention)
		}
		b, hasB := fieldString(f, "bytes")
		l, hasL := fieldString(f, "lines")
		if hasB || hasL {
			r.content = count(b, "byte", "bytes") + ", " + count(l, "line", "lines")
		}
		if target, ok := fieldString(f, "target"); ok {
			op, _ := fieldString(f, "operation")
			r.add("Target: %s (%s)", target, op)
		}
		if msg, ok := fieldString(f, "error"); ok {
			r.add("Error: %s", msg)
			r.worsen(StatusFailed)
		}
		genericFields(r, f, "stage", "bytes", "lines", "target", "operation", "error")
	case string(protocol.TraceWrite):
		target, _ := fieldString(f, "target")
		b, _ := fieldString(f, "bytes")
		l, _ := fieldString(f, "lines")
		line := fmt.Sprintf("Wrote: %s, %s, %s", target, count(b, "byte", "bytes"), count(l, "line", "lines"))
		if mode, ok := fieldString(f, "mode"); ok {
			line += ", mode " + mode
		}
		r.add("%s", line)
		if sum, ok := fieldString(f, "sha256"); ok {
			r.add("SHA256: %s", sum)
		}
		if ws, ok := f["warnings"].([]any); ok {
			for _, w := range ws {
				wm, _ := w.(map[string]any)
				code, _ := fieldString(wm, "code")
				msg, _ := fieldString(wm, "message")
				r.add("Warning: %s: %s", code, msg)
				r.worsen(StatusAttention)
			}
		}
		if fb, ok := fieldString(f, "file_bytes"); ok && fb != b {
			r.add("File now: %s", count(fb, "byte", "bytes"))
		}
		genericFields(r, f, "target", "bytes", "lines", "mode", "sha256", "warnings", "operation", "file_bytes")
	case string(protocol.TraceConflict):
		target, _ := fieldString(f, "target")
		event, _ := fieldString(f, "event")
		r.add("Changed: %s (%s)", target, event)
		r.worsen(StatusAttention)
		genericFields(r, f, "target", "event")
	case string(protocol.TraceError):
		r.worsen(StatusFailed)
		genericFields(r, f)
	case string(protocol.TraceValidation):
		if ok, isBool := f["ok"].(bool); isBool {
			if ok {
				r.add("Validation: passed")
			} else {
				r.add("Validation: refused")
				r.worsen(StatusFailed)
			}
		}
		genericFields(r, f, "ok")
	default:
		r.worsen(StatusUnknown)
		r.add("Event: %s", string(ev.Type))
		genericFields(r, f)
	}
}

// genericFields adds the fields not named in skip as "Key: value" lines,
// leaving out empty ones (null, "", false) that say nothing.
func genericFields(r *rung, f map[string]any, skip ...string) {
	for _, k := range sortedKeys(f) {
		if containsString(skip, k) || f[k] == nil || f[k] == "" || f[k] == false {
			continue
		}
		name := strings.ReplaceAll(k, "_", " ")
		if c, size := utf8.DecodeRuneInString(name); size > 0 && c != utf8.RuneError {
			name = string(unicode.ToUpper(c)) + name[size:]
		}
		r.add("%s: %s", name, compact(f[k]))
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
