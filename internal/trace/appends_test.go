package trace_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/orion-agent/orion/internal/clock"
	"github.com/orion-agent/orion/internal/store"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/protocol"
)

// ack is an acknowledged append of session s at t0+seq ms, taking seq µs,
// of 10 bytes a chunk.
func ack(s string, seq uint64, marker bool) trace.Append {
	return trace.Append{SessionID: s, Start: t0.Add(time.Duration(seq) * time.Millisecond),
		Duration: time.Duration(seq) * time.Microsecond, Seq: seq, Bytes: int64(seq) * 10, EndMarkerSeen: marker}
}

// folded is a compact view of append events: "appends first_seq-seq
// bytes marker duration/max", with the fields a single append leaves out
// shown as _.
func folded(t *testing.T, events []protocol.TraceEvent) []string {
	t.Helper()
	var out []string
	for _, ev := range events {
		if ev.Method != protocol.MethodSessionAppend {
			out = append(out, string(ev.Type))
			continue
		}
		var f map[string]any
		if err := json.Unmarshal(ev.Fields, &f); err != nil {
			t.Fatal(err)
		}
		get := func(k string) any {
			if v, ok := f[k]; ok {
				return v
			}
			return "_"
		}
		out = append(out, fmt.Sprintf("%v %v-%v %v %v/%v %v/%v", get("appends"), get("first_seq"), get("seq"), get("bytes"),
			get("end_marker_seen"), get("end_marker_seq"), get("duration_ms"), get("max_duration_ms")))
	}
	return out
}

func TestRecordAppendFolds(t *testing.T) {
	tests := []struct {
		name   string
		opts   trace.Options
		record func(tr *trace.Tracer)
		want   []string
	}{
		{"OneEventForARun", trace.Options{}, func(tr *trace.Tracer) {
			for seq := uint64(1); seq <= 5; seq++ {
				tr.RecordAppend(ack("s", seq, seq >= 4))
			}
		}, []string{"5 1-5 50 true/4 0.015/0.005"}},
		// The next append may be traced before the previous one: the fold
		// keeps the lowest and highest seq, and the bytes of the highest.
		{"OutOfOrder", trace.Options{}, func(tr *trace.Tracer) {
			for _, seq := range []uint64{3, 2, 5, 4} {
				tr.RecordAppend(ack("s", seq, seq >= 4))
			}
		}, []string{"4 2-5 50 true/4 0.014/0.005"}},
		{"AloneReadsAsBefore", trace.Options{}, func(tr *trace.Tracer) {
			tr.RecordAppend(ack("s", 1, false))
		}, []string{"_ _-1 10 false/_ 0.001/_"}},
		// Any other event of the session comes after the appends before it.
		{"SessionEventEndsTheFold", trace.Options{}, func(tr *trace.Tracer) {
			tr.RecordAppend(ack("s", 1, false))
			tr.RecordAppend(ack("s", 2, false))
			tr.Record(trace.Event{Time: t0.Add(3 * time.Millisecond), Type: protocol.TraceRequest, SessionID: "s",
				Method: protocol.MethodSessionAppend, Fields: map[string]any{"error_code": -32001}})
			tr.RecordAppend(ack("s", 4, true))
			tr.Record(trace.Event{Time: t0.Add(5 * time.Millisecond), Type: protocol.TraceStage, SessionID: "s"})
		}, []string{"2 1-2 20 false/_ 0.003/0.002", "_ _-_ _ _/_ _/_", "_ _-4 40 true/_ 0.004/_", "session.stage"}},
		{"OtherSessionsDoNot", trace.Options{}, func(tr *trace.Tracer) {
			tr.RecordAppend(ack("s", 1, false))
			tr.Record(trace.Event{Time: t0.Add(time.Microsecond), Type: protocol.TraceStage, SessionID: "other"})
			tr.RecordAppend(ack("s", 2, false))
		}, []string{"session.stage", "2 1-2 20 false/_ 0.003/0.002"}},
		{"FoldAppends", trace.Options{FoldAppends: 3}, func(tr *trace.Tracer) {
			for seq := uint64(1); seq <= 7; seq++ {
				tr.RecordAppend(ack("s", seq, false))
			}
		}, []string{"3 1-3 30 false/_ 0.006/0.003", "3 4-6 60 false/_ 0.015/0.006", "_ _-7 70 false/_ 0.007/_"}},
		{"FoldAppendsOne", trace.Options{FoldAppends: 1}, func(tr *trace.Tracer) {
			tr.RecordAppend(ack("s", 1, false))
			tr.RecordAppend(ack("s", 2, true))
		}, []string{"_ _-1 10 false/_ 0.001/_", "_ _-2 20 true/_ 0.002/_"}},
		// An append that ends FoldEvery after the fold's first began ends
		// the fold with itself.
		{"FoldEvery", trace.Options{FoldEvery: 2 * time.Millisecond}, func(tr *trace.Tracer) {
			for seq := uint64(1); seq <= 4; seq++ {
				tr.RecordAppend(ack("s", seq, false))
			}
		}, []string{"3 1-3 30 false/_ 0.006/0.003", "_ _-4 40 false/_ 0.004/_"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, _, _ := newTracer(t, tt.opts)
			tt.record(tr)
			got := folded(t, list(t, tr, protocol.TraceListParams{Limit: 100}).Events)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestFoldSweep: a session that stops appending has its fold recorded by
// the sweep, without a Flush.
func TestFoldSweep(t *testing.T) {
	tr, clk, _ := newTracer(t, trace.Options{FoldEvery: time.Second})
	start := clk.Now()
	tr.RecordAppend(trace.Append{SessionID: "s", Start: start, Duration: time.Millisecond, Seq: 1, Bytes: 1})
	tr.RecordAppend(trace.Append{SessionID: "s", Start: start.Add(time.Millisecond), Duration: time.Millisecond, Seq: 2, Bytes: 2})
	if got := tr.Stats().Recorded; got != 0 {
		t.Fatalf("recorded %d events before the sweep, want 0", got)
	}
	clk.Advance(time.Second)
	if got, want := tr.Stats().Recorded, uint64(1); got != want {
		t.Fatalf("recorded %d events after the sweep, want %d", got, want)
	}
	res := list(t, tr, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "s"}})
	if got, want := folded(t, res.Events), []string{"2 1-2 2 false/_ 2/1"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestFoldAtClose: Close records what is folded.
func TestFoldAtClose(t *testing.T) {
	tr, _, st := newTracer(t, trace.Options{})
	tr.RecordAppend(ack("s", 1, false))
	tr.RecordAppend(ack("s", 2, false))
	tr.Close()
	// The tracer is closed: a new one on the same store lists what the
	// first stored.
	tr2, _, _ := newTracerOn(t, st, trace.Options{})
	res := list(t, tr2, protocol.TraceListParams{TraceFilter: protocol.TraceFilter{SessionID: "s"}})
	if got, want := folded(t, res.Events), []string{"2 1-2 20 false/_ 0.003/0.002"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// After Close an append is dropped and counted, not kept.
	before := tr.Stats().Dropped
	tr.RecordAppend(ack("s", 3, false))
	if got := tr.Stats().Dropped; got != before+1 {
		t.Fatalf("dropped %d after Close, want %d", got, before+1)
	}
}

// newTracerOn returns an attached Tracer on st.
func newTracerOn(t *testing.T, st trace.Store, opts trace.Options) (*trace.Tracer, *clock.Fake, trace.Store) {
	t.Helper()
	clk := clock.NewFake(t0)
	opts.Clock = clk
	tr := trace.New(opts)
	t.Cleanup(func() { tr.Close() })
	if err := tr.Attach(st); err != nil {
		t.Fatal(err)
	}
	return tr, clk, st
}

// BenchmarkRecordAppend is the trace's cost of one acknowledged append
// from 64 sessions, the batcher's encoding and store writes included (the
// benchmark ends with a Flush): each append an event of its own, as before
// folding, against folded.
func BenchmarkRecordAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		fold int
	}{{"Each", 1}, {"Folded", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			st, err := store.Open(filepath.Join(b.TempDir(), "orion.db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			// A buffer for every event, so that none is dropped uncosted.
			tr := trace.New(trace.Options{FoldAppends: bc.fold, Buffer: b.N + 64})
			defer tr.Close()
			if err := tr.Attach(st); err != nil {
				b.Fatal(err)
			}
			sessions := make([]string, 64)
			for i := range sessions {
				sessions[i] = fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
			}
			start := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				tr.RecordAppend(trace.Append{SessionID: sessions[i%64], Start: start, Duration: time.Millisecond,
					Seq: uint64(i/64 + 1), Bytes: int64(i/64+1) * 1024})
			}
			tr.Flush()
			b.StopTimer()
			b.ReportMetric(float64(tr.Stats().Recorded)/float64(b.N), "events/op")
		})
	}
}
